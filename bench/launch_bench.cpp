// bench/launch: what the host pays to start one kernel per GPU, the floor under every small collective's time.
// An empty kernel (loaded from PTX, 4 blocks x 256 threads, a DeviceArgs-sized parameter) is launched in several
// ways and the host's time per call is printed beside the GPUs' (events):
//   one GPU             cudaLaunchKernelExC on GPU 0
//   one GPU, coop       the same, cooperative
//   GPUs in turn        cudaSetDevice + launch per GPU, as Communicator::run does
//   GPUs in turn, drv   cuCtxSetCurrent + cuLaunchKernel through the driver entry points
//   thread per GPU      the caller launches on GPU 0 while one spinning helper thread per other GPU launches on its
//                       own, and waits for them (a call returns only once every launch is queued)
// Then the per-call host work of Communicator::run beside its parts: the driver's pointer query, the stream
// queries, and an 8-byte allreduce with the defaults, without pointer checks, and without launch helpers.
// Usage: canopy-bench-launch [calls, default 20000]. Needs a GPU; with none it says so and exits 0.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "dsl/shipped_topologies.hpp"
#include "bench/bench_check.hpp"
#include "runtime/communicator.hpp"
#include "runtime/driver_api.hpp"

namespace {

using Clock = std::chrono::steady_clock;

const char* kEmptyPtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry empty(.param .align 8 .b8 args[80], .param .u32 device) { ret; }
)";

struct Args {
  unsigned char bytes[80] = {};
};

template <typename Fn>
Fn driver_entry(const char* name, int version) {
  return reinterpret_cast<Fn>(canopy::driver_entry_point(name, version));
}

struct Gpu {
  int ordinal = 0;
  cudaStream_t stream = nullptr;
  cudaKernel_t kernel = nullptr;
  CUcontext context = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};

cudaError_t launch_runtime(Gpu& g, Args& args, bool cooperative) {
  int device = g.ordinal;
  void* params[] = {&args, &device};
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeCooperative;
  attribute.val.cooperative = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(4);
  config.blockDim = dim3(256);
  config.stream = g.stream;
  config.attrs = &attribute;
  config.numAttrs = cooperative ? 1 : 0;
  return cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(g.kernel), params);
}

// Host and GPU microseconds per call of `call` (which launches once on each GPU in `gpus`), median of 5 loops.
void measure(const char* name, std::vector<Gpu*> gpus, int calls, const std::function<void()>& call) {
  for (int i = 0; i < 200; ++i) call();
  std::vector<double> host, device;
  for (int loop = 0; loop < 5; ++loop) {
    for (Gpu* g : gpus) {
      CHECK(cudaSetDevice(g->ordinal));
      CHECK(cudaEventRecord(g->start, g->stream));
    }
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) call();
    host.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls);
    double slowest = 0;
    for (Gpu* g : gpus) {
      CHECK(cudaSetDevice(g->ordinal));
      CHECK(cudaEventRecord(g->stop, g->stream));
      CHECK(cudaEventSynchronize(g->stop));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, g->start, g->stop));
      slowest = std::max(slowest, 1000.0 * ms / calls);
    }
    device.push_back(slowest);
  }
  std::sort(host.begin(), host.end());
  std::sort(device.begin(), device.end());
  fmt::print("{:<40} host {:6.2f} us/call   GPUs {:6.2f} us/call\n", name, host[2], device[2]);
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    fmt::print("canopy-bench-launch: no GPU ({}), nothing measured\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
  }
  using CtxSetCurrent = CUresult (*)(CUcontext);
  using CtxGetCurrent = CUresult (*)(CUcontext*);
  using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**);
  const auto ctx_set = driver_entry<CtxSetCurrent>("cuCtxSetCurrent", 4000);
  const auto ctx_get = driver_entry<CtxGetCurrent>("cuCtxGetCurrent", 4000);
  const auto launch_kernel = driver_entry<LaunchKernel>("cuLaunchKernel", 4000);

  std::vector<Gpu> gpus(std::min(count, 8));
  for (int d = 0; d < static_cast<int>(gpus.size()); ++d) {
    Gpu& g = gpus[d];
    g.ordinal = d;
    CHECK(cudaSetDevice(d));
    CHECK(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&g.start));
    CHECK(cudaEventCreate(&g.stop));
    cudaLibrary_t library = nullptr;
    CHECK(cudaLibraryLoadData(&library, kEmptyPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CHECK(cudaLibraryGetKernel(&g.kernel, library, "empty"));
    CHECK(cudaFree(nullptr));
    if (ctx_get) ctx_get(&g.context);
  }
  fmt::print("{} GPU(s), {} calls per loop\n", gpus.size(), calls);
  Args args;
  Gpu& g0 = gpus[0];
  CHECK(cudaSetDevice(0));
  measure("one GPU", {&g0}, calls, [&] { CHECK(launch_runtime(g0, args, false)); });
  measure("one GPU, cooperative", {&g0}, calls, [&] { CHECK(launch_runtime(g0, args, true)); });
  measure("one GPU, cudaSetDevice each call", {&g0}, calls, [&] {
    CHECK(cudaSetDevice(0));
    CHECK(launch_runtime(g0, args, false));
  });
  if (launch_kernel && ctx_set)
    measure("one GPU, driver cuLaunchKernel", {&g0}, calls, [&] {
      int device = 0;
      void* params[] = {&args, &device};
      if (launch_kernel(reinterpret_cast<CUfunction>(g0.kernel), 4, 1, 1, 256, 1, 1, 0,
                        reinterpret_cast<CUstream>(g0.stream), params, nullptr) != CUDA_SUCCESS)
        std::exit(1);
    });
  if (gpus.size() < 2) return 0;

  std::vector<Gpu*> all;
  for (Gpu& g : gpus) all.push_back(&g);
  measure("GPUs in turn (cudaSetDevice + launch)", all, calls, [&] {
    for (Gpu& g : gpus) {
      CHECK(cudaSetDevice(g.ordinal));
      CHECK(launch_runtime(g, args, false));
    }
  });
  measure("GPUs in turn, cooperative", all, calls, [&] {
    for (Gpu& g : gpus) {
      CHECK(cudaSetDevice(g.ordinal));
      CHECK(launch_runtime(g, args, true));
    }
  });
  if (launch_kernel && ctx_set)
    measure("GPUs in turn, driver (cuCtxSetCurrent)", all, calls, [&] {
      for (Gpu& g : gpus) {
        int device = g.ordinal;
        void* params[] = {&args, &device};
        if (ctx_set(g.context) != CUDA_SUCCESS ||
            launch_kernel(reinterpret_cast<CUfunction>(g.kernel), 4, 1, 1, 256, 1, 1, 0,
                          reinterpret_cast<CUstream>(g.stream), params, nullptr) != CUDA_SUCCESS)
          std::exit(1);
      }
    });

  // One spinning helper per GPU after the first: the caller bumps `ticket`, each helper launches once and bumps
  // `done`; the caller launches on GPU 0 and waits until every helper has.
  std::atomic<long> ticket{0}, done{0};
  std::atomic<bool> quit{false};
  std::vector<std::thread> helpers;
  for (std::size_t d = 1; d < gpus.size(); ++d)
    helpers.emplace_back([&, d] {
      CHECK(cudaSetDevice(gpus[d].ordinal));
      long seen = 0;
      while (!quit.load(std::memory_order_acquire)) {
        const long t = ticket.load(std::memory_order_acquire);
        if (t == seen) continue;
        seen = t;
        CHECK(launch_runtime(gpus[d], args, false));
        done.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  long expected = 0;
  const long helper_count = static_cast<long>(helpers.size());
  measure("thread per GPU (spinning helpers)", all, calls, [&] {
    CHECK(cudaSetDevice(0));
    ticket.fetch_add(1, std::memory_order_acq_rel);
    CHECK(launch_runtime(g0, args, false));
    expected += helper_count;
    while (done.load(std::memory_order_acquire) < expected) {
    }
  });
  quit.store(true, std::memory_order_release);
  for (std::thread& t : helpers) t.join();

  // The host work of a call, piece by piece (GPU 0's buffer and stream).
  void* buffer = nullptr;
  CHECK(cudaSetDevice(0));
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
    CHECK(cudaStreamGetDevice(g0.stream, &d));
  });
  per_call("cudaStreamIsCapturing", [&] {
    cudaStreamCaptureStatus c{};
    CHECK(cudaStreamIsCapturing(g0.stream, &c));
  });

  // Whole calls: an 8-byte allreduce over the GPUs (2 elements of f32), the host's time per call.
  const auto allreduce = [&](const char* name, bool threads, bool check_pointers) {
    setenv("CANOPY_CHECK_POINTERS", check_pointers ? "1" : "0", 1);
    canopy::CommunicatorOptions o;
    for (Gpu& g : gpus) o.devices.push_back(g.ordinal);
    o.launch_threads = threads;
    std::unique_ptr<canopy::Communicator> comm;
    if (canopy::Status s = canopy::Communicator::create(o, &comm); !s.ok()) {
      fmt::print("{}: {}\n", name, s.message());
      return;
    }
    std::vector<void*> bufs(gpus.size());
    std::vector<const void*> send(gpus.size());
    std::vector<cudaStream_t> streams(gpus.size());
    for (std::size_t d = 0; d < gpus.size(); ++d) {
      CHECK(cudaSetDevice(gpus[d].ordinal));
      CHECK(cudaMalloc(&bufs[d], 1 << 20));
      send[d] = static_cast<char*>(bufs[d]) + (512 << 10);
      streams[d] = gpus[d].stream;
    }
    measure(name, all, calls, [&] {
      if (canopy::Status s = comm->allreduce(send, bufs, 2, canopy::DataType::f32, canopy::ReduceOp::sum, streams);
          !s.ok()) {
        fmt::print("{}\n", s.message());
        std::exit(1);
      }
    });
    for (std::size_t d = 0; d < gpus.size(); ++d) {
      CHECK(cudaSetDevice(gpus[d].ordinal));
      CHECK(cudaDeviceSynchronize());
    }
    comm.reset();
    for (void* b : bufs) CHECK(cudaFree(b));
  };
  allreduce("allreduce 8 B (helpers, pointer checks)", true, true);
  allreduce("allreduce 8 B (helpers, no pointer checks)", true, false);
  allreduce("allreduce 8 B (in turn, pointer checks)", false, true);
  allreduce("allreduce 8 B (in turn, no pointer checks)", false, false);
  return 0;
}
