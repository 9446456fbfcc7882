// An application embedding Canopy (examples/embed/README.md walks through it): describes its machine in the C++ DSL,
// plans an allreduce over it and prints the plan, generates the CUDA kernel and JIT-compiles it with NVRTC through
// the on-disk kernel cache, then, where a GPU exists, runs the allreduce through a Communicator and checks the sums
// (the machine's four ranks run as virtual ranks when there are fewer GPUs). Without a GPU it stops after the compile.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "canopy.hpp"

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

// Four GPUs: two NVLink pairs, all four on one PCIe switch (the README's my-box).
canopy::Topology describe_machine() {
  canopy::Topology t("embed-box");
  const std::vector<canopy::NodeId> g = t.gpus(4);
  const canopy::NodeId plx = t.relay("plx0");
  t.link(g[0], g[1], canopy::nvlink2 * 2).link(g[2], g[3], canopy::nvlink2 * 2);
  for (canopy::NodeId gpu : g) t.link(gpu, plx, canopy::pcie4);
  t.validate();
  return t;
}

void print_plan(const canopy::Plan& plan) {
  std::printf("plan: %s over %zu ranks of %s, %zu trees, predicted %.1f GB/s (proven bound %.1f GB/s)\n",
              canopy::to_string(plan.collective).c_str(), plan.ranks.size(), plan.topology.c_str(), plan.trees.size(),
              plan.algbw_gbps, plan.bound_algbw_gbps);
  for (const canopy::Tree& tree : plan.trees) {
    std::printf("  phase %d  root %-5s %-3s  %.4f of the data:", tree.phase, tree.root.c_str(),
                canopy::to_string(tree.direction).c_str(), tree.fraction);
    for (const canopy::TreeEdge& edge : tree.edges) std::printf(" %s->%s", edge.from.c_str(), edge.to.c_str());
    std::printf("\n");
  }
}

// The GPU's architecture ("sm_90"), or the default target when there is no GPU to ask.
std::string target_arch(bool have_gpu) {
  cudaDeviceProp props{};
  if (!have_gpu || cudaGetDeviceProperties(&props, 0) != cudaSuccess) return canopy::CompileOptions{}.arch;
  return "sm_" + std::to_string(props.major * 10 + props.minor);
}

// Every rank's buffer holds rank + 1; after an in-place allreduce (sum) each element must be 1 + 2 + ... + ranks.
int run_allreduce(const canopy::Topology& machine, int gpus) {
  canopy::CommunicatorOptions options;
  options.topology = machine;
  std::unique_ptr<canopy::Communicator> comm;
  if (canopy::Status s = canopy::Communicator::create(options, &comm); !s.ok()) {
    std::fprintf(stderr, "communicator: %s\n", s.message().c_str());
    return 1;
  }
  const int ranks = comm->ranks();
  const std::size_t count = 1 << 20;
  std::vector<void*> buffers(ranks);
  std::vector<cudaStream_t> stream_of_device(gpus, nullptr);
  std::vector<cudaStream_t> streams(ranks);
  for (int r = 0; r < ranks; ++r) {
    const int device = comm->device_of_rank(r);
    check(cudaSetDevice(device), "cudaSetDevice");
    if (!stream_of_device[device])  // ranks of one GPU share its stream
      check(cudaStreamCreate(&stream_of_device[device]), "cudaStreamCreate");
    streams[r] = stream_of_device[device];
    const std::vector<float> host(count, static_cast<float>(r + 1));
    check(cudaMalloc(&buffers[r], count * sizeof(float)), "cudaMalloc");
    check(cudaMemcpy(buffers[r], host.data(), count * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  const std::vector<const void*> send(buffers.begin(), buffers.end());
  if (canopy::Status s =
          comm->allreduce(send, buffers, count, canopy::DataType::f32, canopy::ReduceOp::sum, streams);
      !s.ok()) {
    std::fprintf(stderr, "allreduce: %s\n", s.message().c_str());
    return 1;
  }
  const float expected = ranks * (ranks + 1) / 2.0f;
  std::size_t wrong = 0;
  std::vector<float> host(count);
  for (int r = 0; r < ranks; ++r) {
    check(cudaSetDevice(comm->device_of_rank(r)), "cudaSetDevice");
    check(cudaStreamSynchronize(streams[r]), "the allreduce");
    check(cudaMemcpy(host.data(), buffers[r], count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    for (float v : host) wrong += v != expected;
  }
  std::printf("ran: allreduce of %zu floats on %d ranks over %d GPU(s), %zu wrong (expected %.0f everywhere)\n", count,
              ranks, comm->devices(), wrong, expected);
  comm.reset();  // waits for its launches; then the buffers and streams can go
  for (void* buffer : buffers) cudaFree(buffer);
  for (cudaStream_t stream : stream_of_device)
    if (stream) cudaStreamDestroy(stream);
  return wrong ? 1 : 0;
}

}  // namespace

int main() try {
  std::printf("Canopy %s (headers %s)\n", canopy::library_version(), CANOPY_VERSION);
  const canopy::Topology machine = describe_machine();
  print_plan(canopy::plan(machine, canopy::Collective::allreduce));

  int gpus = 0;
  const bool have_gpu = cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0;
  canopy::BuildOptions options;  // f32 sum, the default kernel shape
  options.compile.arch = target_arch(have_gpu);
  canopy::Builder builder(canopy::DiskCache::from_environment());  // $CANOPY_CACHE_DIR, else ~/.cache/canopy
  canopy::CacheOutcome outcome{};
  const auto built = builder.build(machine, canopy::Collective::allreduce, options, &outcome);
  std::printf("kernel: %s, %zu lines of CUDA, %zu-byte %s binary (%s)\n", built->source.entry.c_str(),
              static_cast<std::size_t>(std::count(built->source.file.text.begin(), built->source.file.text.end(), '\n')),
              built->module->cubin.size(), options.compile.arch.c_str(), canopy::to_string(outcome).c_str());

  if (!have_gpu) {
    std::printf("no GPU: the plan and its compiled kernel are all this machine can show\n");
    return 0;
  }
  return run_allreduce(machine, gpus);
} catch (const std::exception& e) {  // canopy::Error (a std::exception) names the input at fault and the fix
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
