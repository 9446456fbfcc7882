// The launch bench's call probes (see launch_bench.hpp): what a collective call adds to its launch on the host.
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "bench/bench_check.hpp"
#include "bench/launch_bench.hpp"
#include "topology/shipped_topologies.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/cuda_call_oracle.hpp"

namespace launch_bench {

// The host work of a call besides its launches, piece by piece (GPU 0's buffer and stream): each runtime query a
// call makes, alone in a loop.
void call_pieces(Gpu& g, int calls) {
  void* buffer = nullptr;
  CHECK(cudaSetDevice(g.ordinal));
  CHECK(cudaMalloc(&buffer, 1 << 20));
  const auto per_call = [&](const char* name, const std::function<void()>& work) {
    for (int i = 0; i < 200; ++i) work();
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) work();
    fmt::print("{:<40} host {:6.3f} us/call\n", name,
               std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls);
  };
  per_call("cuPointerGetAttributes (5 attributes)", [&] { (void)canopy::driver_pointer_facts(buffer); });
  per_call("cudaStreamGetDevice", [&] {
    int d = 0;
    CHECK(cudaStreamGetDevice(g.stream, &d));
  });
  per_call("cudaStreamIsCapturing", [&] {
    cudaStreamCaptureStatus c{};
    CHECK(cudaStreamIsCapturing(g.stream, &c));
  });
  per_call("cudaStreamGetId", [&] {
    unsigned long long id = 0;
    CHECK(cudaStreamGetId(g.stream, &id));
  });
  per_call("cudaGetDevice", [&] {
    int d = 0;
    CHECK(cudaGetDevice(&d));
  });
  per_call("cudaSetDevice (the current one)", [&] { CHECK(cudaSetDevice(g.ordinal)); });
  // The same questions asked of the driver directly (the runtime's calls reach these after their own checks).
  using CtxGetCurrent = CUresult (*)(CUcontext*);
  using StreamIsCapturing = CUresult (*)(CUstream, CUstreamCaptureStatus*);
  using StreamGetId = CUresult (*)(CUstream, unsigned long long*);
  const auto ctx_get = driver_entry<CtxGetCurrent>("cuCtxGetCurrent", 4000);
  const auto is_capturing = driver_entry<StreamIsCapturing>("cuStreamIsCapturing", 10000);
  const auto get_id = driver_entry<StreamGetId>("cuStreamGetId", 12000);
  const auto stream = reinterpret_cast<CUstream>(g.stream);
  if (ctx_get)
    per_call("cuCtxGetCurrent", [&] {
      CUcontext c = nullptr;
      if (ctx_get(&c) != CUDA_SUCCESS) std::exit(1);
    });
  if (is_capturing)
    per_call("cuStreamIsCapturing", [&] {
      CUstreamCaptureStatus c{};
      if (is_capturing(stream, &c) != CUDA_SUCCESS) std::exit(1);
    });
  if (get_id)
    per_call("cuStreamGetId", [&] {
      unsigned long long id = 0;
      if (get_id(stream, &id) != CUDA_SUCCESS) std::exit(1);
    });
  per_call("steady_clock::now", [&] { (void)Clock::now(); });
  // A whole call's checks (check_call with the communicator's oracle): an 8-byte allreduce of one rank, send and
  // recv in two allocations, with and without the pointer queries.
  void* other = nullptr;
  CHECK(cudaMalloc(&other, 1 << 20));
  for (const bool pointers : {true, false}) {
    std::vector<canopy::StreamFacts> seen;
    const canopy::CallOracle oracle = canopy::cuda_call_oracle(pointers, &seen);
    const std::vector<int> device_of_rank{g.ordinal};
    const void* send[] = {other};
    void* recv[] = {buffer};
    cudaStream_t streams[] = {g.stream};
    const canopy::CollectiveCall call{canopy::Collective::allreduce, send, recv, 2, canopy::DataType::f32,
                                      canopy::ReduceOp::sum, 0, streams};
    unsigned long long ids[1] = {};
    bool capturing = false;
    per_call(pointers ? "check_call, 1 rank, pointer checks" : "check_call, 1 rank, no pointer checks", [&] {
      if (!canopy::check_call(call, device_of_rank, oracle, &capturing, ids).ok()) std::exit(1);
    });
  }
  CHECK(cudaFree(other));
  CHECK(cudaFree(buffer));
}

// Whole calls: an 8-byte allreduce over the GPUs (2 elements of f32), the host's time per call; on one GPU, the two
// ranks of h200x2 as virtual ranks (one launch per call, so what the call adds to a launch shows).
void allreduce_calls(std::vector<Gpu>& gpus, Args& args, int calls) {
  std::vector<Gpu*> all;
  for (Gpu& g : gpus) all.push_back(&g);
  struct Setup {
    const char* name;
    std::unique_ptr<canopy::Communicator> comm;
    std::vector<void*> bufs;
    std::vector<const void*> send;
    std::vector<cudaStream_t> streams;
    void call() const {
      if (canopy::Status s = comm->allreduce(send, bufs, 2, canopy::DataType::f32, canopy::ReduceOp::sum, streams);
          !s.ok()) {
        fmt::print("{}\n", s.message());
        std::exit(1);
      }
    }
  };
  std::vector<std::unique_ptr<Setup>> setups;
  const auto set_up = [&](const char* name, bool threads, bool check_pointers) {
    setenv("CANOPY_CHECK_POINTERS", check_pointers ? "1" : "0", 1);  // read when a communicator is created
    canopy::CommunicatorOptions o;
    for (Gpu& g : gpus) o.devices.push_back(g.ordinal);
    if (gpus.size() == 1) o.topology = canopy::load_topology("h200x2");
    o.launch_threads = threads;
    auto setup = std::make_unique<Setup>();
    setup->name = name;
    if (canopy::Status s = canopy::Communicator::create(o, &setup->comm); !s.ok()) {
      fmt::print("{}: {}\n", name, s.message());
      return;
    }
    const int ranks = setup->comm->ranks();
    setup->bufs.resize(ranks);
    setup->send.resize(ranks);
    setup->streams.resize(ranks);
    for (int r = 0; r < ranks; ++r) {
      CHECK(cudaSetDevice(setup->comm->device_of_rank(r)));
      CHECK(cudaMalloc(&setup->bufs[r], 1 << 20));
      setup->send[r] = static_cast<char*>(setup->bufs[r]) + (512 << 10);
      for (Gpu& g : gpus)
        if (g.ordinal == setup->comm->device_of_rank(r)) setup->streams[r] = g.stream;
    }
    setups.push_back(std::move(setup));
  };
  set_up("allreduce 8 B (helpers, pointer checks)", true, true);
  set_up("allreduce 8 B (helpers, no pointer checks)", true, false);
  if (gpus.size() > 1) {
    set_up("allreduce 8 B (in turn, pointer checks)", false, true);
    set_up("allreduce 8 B (in turn, no pointer checks)", false, false);
  }
  for (const auto& setup : setups) measure(setup->name, all, calls, [&] { setup->call(); });
  // The same calls taking turns; on one GPU beside the bare cooperative launch, so what a call adds to its launch
  // shows without the machine's drift between loops.
  std::vector<std::pair<const char*, std::function<void()>>> probes;
  if (gpus.size() == 1)
    probes.emplace_back("cooperative launch (cudaLaunchKernelExC)",
                        [&] { CHECK(launch_runtime(gpus[0], args, true)); });
  for (const auto& setup : setups) probes.emplace_back(setup->name, [&setup] { setup->call(); });
  interleaved("8-byte allreduces", probes, calls);
  for (auto& setup : setups) {
    for (Gpu& g : gpus) {
      CHECK(cudaSetDevice(g.ordinal));
      CHECK(cudaDeviceSynchronize());
    }
    setup->comm.reset();
    for (void* b : setup->bufs) CHECK(cudaFree(b));
  }
}

}  // namespace launch_bench
