// canopy_nccl_check --mode graphs: collectives captured into CUDA graphs through the NCCL API, as PyTorch captures
// them, replayed with fresh inputs. For each count (ascending: the LL protocol, the staged direct protocol, and a large
// one whose staging area replaces the smaller one's after that one's graph was captured), every case of
// nccl_check_cases runs once eagerly (loading its kernel: a capture cannot compile), is captured into one graph per
// count (cudaStreamBeginCapture in --capture mode ... cudaStreamEndCapture, instantiated), then every graph is
// replayed --replays times, interleaved: before each replay the send buffers get another input set (copied from sets
// kept on the GPU) and the receive buffers NaN poison, and after it every checked output element is compared.
// Prints "nccl rank R: graphs: N replays checked, W wrong".
#include <fmt/format.h>

#include <memory>

#include "tests/gpu/processes/nccl_check.hpp"
#include "tests/gpu/processes/nccl_check_cases.hpp"

namespace canopy::nccl_check {

namespace {

constexpr int kSets = 4;  // input sets cycled through by the replays (with the poison, a stale output shows)

struct CaseBuffers {
  Case c;
  float* send = nullptr;
  float* recv = nullptr;          // send itself in place
  std::vector<float*> sets;       // kSets input sets on the GPU
  std::vector<std::vector<float>> want;  // per set
};

struct CountGraph {
  std::size_t count = 0;
  std::vector<CaseBuffers> cases;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

cudaStreamCaptureMode capture_mode(const std::string& name) {
  if (name == "thread") return cudaStreamCaptureModeThreadLocal;
  if (name == "relaxed") return cudaStreamCaptureModeRelaxed;
  return cudaStreamCaptureModeGlobal;
}

bool make_buffers(const CheckRank& c, std::size_t count, CountGraph* g) {
  g->count = count;
  for (Case k : kCases) {
    CaseBuffers b;
    b.c = k;
    const std::size_t sn = send_elements(k, count, c.nranks), rn = recv_elements(k, count, c.nranks);
    if (!cuda_ok(cudaMalloc(&b.send, sn * sizeof(float)), "cudaMalloc send")) return false;
    if (in_place(k))
      b.recv = b.send;
    else if (!cuda_ok(cudaMalloc(&b.recv, rn * sizeof(float)), "cudaMalloc recv"))
      return false;
    for (int s = 0; s < kSets; ++s) {
      float* d = nullptr;
      const std::vector<float> in = inputs(k, count, c.rank, c.nranks, s);
      if (!cuda_ok(cudaMalloc(&d, sn * sizeof(float)), "cudaMalloc input set") ||
          !cuda_ok(cudaMemcpy(d, in.data(), sn * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy input set"))
        return false;
      b.sets.push_back(d);
      b.want.push_back(expected(k, count, c.rank, c.nranks, s));
    }
    g->cases.push_back(std::move(b));
  }
  return true;
}

// Fresh inputs (set `set`) and poisoned outputs, queued on the stream.
bool stage_inputs(const CheckRank& c, const CountGraph& g, int set) {
  for (const CaseBuffers& b : g.cases) {
    const std::size_t sn = send_elements(b.c, g.count, c.nranks), rn = recv_elements(b.c, g.count, c.nranks);
    if (!in_place(b.c) && !cuda_ok(cudaMemsetAsync(b.recv, 0xff, rn * sizeof(float), c.stream), "cudaMemsetAsync"))
      return false;
    if (!cuda_ok(cudaMemcpyAsync(b.send, b.sets[set], sn * sizeof(float), cudaMemcpyDeviceToDevice, c.stream),
                 "cudaMemcpyAsync input"))
      return false;
  }
  return true;
}

// Every checked output after the stream's work: wrong elements counted.
std::size_t check_outputs(const CheckRank& c, const CountGraph& g, int set, const std::string& when) {
  if (!cuda_ok(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize")) return 1;
  std::size_t wrong = 0;
  std::vector<float> got;
  for (const CaseBuffers& b : g.cases) {
    if (!recv_checked(b.c, c.rank, c.nranks)) continue;
    got.resize(recv_elements(b.c, g.count, c.nranks));
    if (!cuda_ok(cudaMemcpy(got.data(), b.recv, got.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy"))
      return 1;
    const std::string what = fmt::format("{} count {} {}", case_name(b.c), g.count, when);
    wrong += compare(got, b.want[set], what.c_str(), c.rank);
  }
  return wrong;
}

bool issue_all(const CheckRank& c, const CountGraph& g, const char* when) {
  for (const CaseBuffers& b : g.cases)
    if (!ok(issue(b.c, b.send, b.recv, g.count, c.comm, c.stream), fmt::format("{} {}", case_name(b.c), when).c_str(),
            c.comm))
      return false;
  return true;
}

bool capture(const CheckRank& c, CountGraph* g) {
  if (!cuda_ok(cudaStreamBeginCapture(c.stream, capture_mode(c.args->capture)), "cudaStreamBeginCapture")) return false;
  const bool issued = issue_all(c, *g, "captured");
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(c.stream, &graph);  // ends the capture whatever happened inside
  if (!issued || !cuda_ok(end, "cudaStreamEndCapture")) return false;
  g->graph = graph;
  return cuda_ok(cudaGraphInstantiate(&g->exec, graph, 0), "cudaGraphInstantiate");
}

}  // namespace

int check_graphs(const CheckRank& c) {
  std::vector<std::size_t> counts = c.args->counts;
  if (counts.empty()) counts = {1031, 262147, 4194307};  // 4 KiB (LL), 1 MiB (direct, staged), 16 MiB
  std::vector<CountGraph> graphs(counts.size());
  std::size_t wrong = 0, replays = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    CountGraph& g = graphs[i];
    if (!make_buffers(c, counts[i], &g)) return 1;
    // Eager first: loads each kernel and grows the staging area (a later, larger count replaces it).
    if (!stage_inputs(c, g, 0) || !issue_all(c, g, "eager")) return 1;
    wrong += check_outputs(c, g, 0, "eager");
    if (!capture(c, &g)) return 1;
  }
  for (int k = 0; k < c.args->replays; ++k)
    for (CountGraph& g : graphs) {
      const int set = (k + 1) % kSets;
      if (!stage_inputs(c, g, set)) return 1;
      if (!cuda_ok(cudaGraphLaunch(g.exec, c.stream), "cudaGraphLaunch")) return 1;
      wrong += check_outputs(c, g, set, fmt::format("replay {}", k));
      ++replays;
    }
  // An eager call after the replays still pairs up across the processes (the launch counts agree).
  for (CountGraph& g : graphs) {
    if (!stage_inputs(c, g, 2) || !issue_all(c, g, "eager after the replays")) return 1;
    wrong += check_outputs(c, g, 2, "eager after the replays");
  }
  for (CountGraph& g : graphs) {
    cudaGraphExecDestroy(g.exec);
    cudaGraphDestroy(g.graph);
    for (CaseBuffers& b : g.cases) {
      cudaFree(b.send);
      if (!in_place(b.c)) cudaFree(b.recv);
      for (float* s : b.sets) cudaFree(s);
    }
  }
  fmt::print("nccl rank {}: graphs: {} replays checked, {} wrong\n", c.rank, replays, wrong);
  return wrong == 0 ? 0 : 1;
}

}  // namespace canopy::nccl_check
