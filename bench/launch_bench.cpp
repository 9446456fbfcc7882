// bench/launch: what the host pays to start one kernel per GPU, the floor under every small collective's time.
// An empty kernel (loaded from PTX, 4 blocks x 256 threads, a DeviceArgs-sized parameter) is launched in several
// ways and the host's time per call is printed beside the GPUs' (events):
//   one GPU             cudaLaunchKernelExC on GPU 0
//   one GPU, coop       the same, cooperative
//   GPUs in turn        cudaSetDevice + launch per GPU, as Communicator::run does
//   GPUs in turn, drv   cuCtxSetCurrent + cuLaunchKernel through the driver entry points
//   thread per GPU      the caller launches on GPU 0 while one spinning helper thread per other GPU launches on its
//                       own, and waits for them (a call returns only once every launch is queued)
//   CUkernel/CUfunction cuLaunchKernelEx with the library's kernel handle, or with this context's function
//   runtime vs driver   cudaLaunchKernelExC and cuLaunchKernelEx taking turns, so the machine's drift reaches both
//   bursts              1 or 20 launches after the stream went idle (as canopy bench's loops of 20), then pinned
//   multi-device        one driver call for every GPU's launch (cuLaunchCooperativeKernelMultiDevice, deprecated but
//                       in CUDA 13's driver), each kernel ordered only on its own stream: would it cost less than a
//                       launch per GPU?
// Then the per-call host work of Communicator::run beside its parts: each runtime query a call makes (pointer,
// stream, device), and an 8-byte allreduce with the defaults, without pointer checks, and without launch helpers,
// alone and taking turns (on one GPU: two virtual ranks of h200x2, one launch per call, beside a bare launch).
// Usage: canopy-bench-launch [calls, default 20000]. Needs a GPU; with none it says so and exits 0.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "bench/bench_check.hpp"
#include "bench/launch_bench.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "tools/usage/command_line.hpp"

namespace launch_bench {
namespace {

const char* kEmptyPtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry empty(.param .align 8 .b8 args[80], .param .u32 device) { ret; }

.visible .entry signal_wait(.param .u64 signal, .param .u64 wait, .param .u64 value) {
  .reg .u64 %a<5>;
  .reg .pred %p;
  ld.param.u64 %a0, [signal];
  ld.param.u64 %a1, [wait];
  ld.param.u64 %a2, [value];
  cvta.to.global.u64 %a0, %a0;
  cvta.to.global.u64 %a1, %a1;
  st.release.sys.global.u64 [%a0], %a2;
SPIN:
  ld.acquire.sys.global.u64 %a3, [%a1];
  setp.lt.u64 %p, %a3, %a2;
  @%p bra SPIN;
  ret;
}

.visible .entry wait_signal(.param .u64 signal, .param .u64 wait, .param .u64 value) {
  .reg .u64 %a<5>;
  .reg .pred %p;
  ld.param.u64 %a0, [signal];
  ld.param.u64 %a1, [wait];
  ld.param.u64 %a2, [value];
  cvta.to.global.u64 %a0, %a0;
  cvta.to.global.u64 %a1, %a1;
SPIN:
  ld.acquire.sys.global.u64 %a3, [%a1];
  setp.lt.u64 %p, %a3, %a2;
  @%p bra SPIN;
  st.release.sys.global.u64 [%a0], %a2;
  ret;
}
)";

// Bursts, as canopy bench's timed loops issue their calls: `burst` launches right after the stream went idle (a
// synchronize, or a spin on cudaStreamQuery that keeps this CPU busy), the host's time per launch, median and fastest
// of 301 bursts; then the same with this thread pinned to the CPU it runs on (sched_setaffinity). The steady state
// above keeps the driver's code and data hot; a burst starts from a wait, as every loop of 20 calls does.
void burst_probes(Gpu& g, Args& args) {
  CHECK(cudaSetDevice(g.ordinal));
  const auto bursts = [&](const char* name, int burst, bool spin) {
    std::vector<double> per;
    for (int rep = 0; rep < 301; ++rep) {
      if (spin) {
        while (cudaStreamQuery(g.stream) == cudaErrorNotReady) {
        }
        (void)cudaGetLastError();
      } else {
        CHECK(cudaStreamSynchronize(g.stream));
      }
      const auto t0 = Clock::now();
      for (int i = 0; i < burst; ++i) CHECK(launch_runtime(g, args, false));
      per.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / burst);
    }
    CHECK(cudaStreamSynchronize(g.stream));
    std::sort(per.begin(), per.end());
    fmt::print("  {:<44} host {:6.2f} us/launch median, {:6.2f} fastest\n", name, per[per.size() / 2], per[0]);
  };
  const auto all = [&](const char* pinned) {
    fmt::print("bursts after an idle stream{}\n", pinned);
    bursts("1 launch after a synchronize", 1, false);
    bursts("20 launches after a synchronize", 20, false);
    bursts("1 launch after a spin", 1, true);
    bursts("20 launches after a spin", 20, true);
  };
  all("");
  cpu_set_t was;
  CPU_ZERO(&was);
  if (sched_getaffinity(0, sizeof was, &was) != 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) {
    fmt::print("bursts, pinned: sched_setaffinity failed, skipped\n");
    return;
  }
  all(", this thread pinned to one CPU");
  measure("one GPU, pinned", {&g}, 20000, [&] { CHECK(launch_runtime(g, args, false)); });
  (void)sched_setaffinity(0, sizeof was, &was);
}

// The launch's kernel handle: a library's CUkernel (what cudaLibraryGetKernel gives, resolved to this context's
// function by the driver at every launch) against the CUfunction of this context, looked up once
// (cuKernelGetFunction); through cuLaunchKernelEx, plain and cooperative.
void handle_probes(Gpu& g, Args& args, int calls) {
  using KernelGetFunction = CUresult (*)(CUfunction*, CUkernel);
  using LaunchKernelEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
  const auto get_function = driver_entry<KernelGetFunction>("cuKernelGetFunction", 12000);
  const auto launch_ex = driver_entry<LaunchKernelEx>("cuLaunchKernelEx", 12000);
  if (!get_function || !launch_ex) {
    fmt::print("cuKernelGetFunction or cuLaunchKernelEx: not in this driver, skipped\n");
    return;
  }
  CHECK(cudaSetDevice(g.ordinal));
  CUfunction function = nullptr;
  if (get_function(&function, reinterpret_cast<CUkernel>(g.kernel)) != CUDA_SUCCESS) {
    fmt::print("cuKernelGetFunction failed, skipped\n");
    return;
  }
  int device = g.ordinal;
  void* params[] = {&args, &device};
  const auto launch = [&](CUfunction f, bool cooperative) {
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attribute.value.cooperative = 1;
    CUlaunchConfig config{};
    config.gridDimX = 4;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 256;
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = reinterpret_cast<CUstream>(g.stream);
    config.attrs = &attribute;
    config.numAttrs = cooperative ? 1 : 0;
    if (const CUresult r = launch_ex(&config, f, params, nullptr); r != CUDA_SUCCESS) {
      fmt::print("cuLaunchKernelEx failed: CUresult {}\n", static_cast<int>(r));
      std::exit(1);
    }
  };
  const auto kernel = reinterpret_cast<CUfunction>(g.kernel);
  measure("one GPU, cuLaunchKernelEx, CUkernel", {&g}, calls, [&] { launch(kernel, false); });
  measure("one GPU, cuLaunchKernelEx, CUfunction", {&g}, calls, [&] { launch(function, false); });
  measure("one GPU, coop cuLaunchKernelEx, CUkernel", {&g}, calls, [&] { launch(kernel, true); });
  measure("one GPU, coop cuLaunchKernelEx, CUfunction", {&g}, calls, [&] { launch(function, true); });
  interleaved("runtime against driver launches, one GPU",
              {{"cudaLaunchKernelExC", [&] { CHECK(launch_runtime(g, args, false)); }},
               {"cuLaunchKernelEx", [&] { launch(kernel, false); }},
               {"cuLaunchKernelEx, CUfunction", [&] { launch(function, false); }},
               {"cudaLaunchKernelExC, cooperative", [&] { CHECK(launch_runtime(g, args, true)); }},
               {"cuLaunchKernelEx, cooperative", [&] { launch(kernel, true); }},
               {"cudaSetDevice + cudaLaunchKernelExC",
                [&] {
                  CHECK(cudaSetDevice(g.ordinal));
                  CHECK(launch_runtime(g, args, false));
                }}},
              calls);
}

// One driver call launching on every GPU in `gpus` (kernels need the cooperative attribute's residency; 4 blocks do),
// each ordered only on its own stream. Skipped where the driver or the GPUs lack it.
void multi_device_probe(std::vector<Gpu>& gpus, Args& args, int calls) {
  using MultiLaunch = CUresult (*)(CUDA_LAUNCH_PARAMS*, unsigned, unsigned);
  using KernelGetFunction = CUresult (*)(CUfunction*, CUkernel);
  const auto multi = driver_entry<MultiLaunch>("cuLaunchCooperativeKernelMultiDevice", 9000);
  using DeviceGetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  const auto get_function = driver_entry<KernelGetFunction>("cuKernelGetFunction", 12000);
  const auto get_attribute = driver_entry<DeviceGetAttribute>("cuDeviceGetAttribute", 2000);
  if (!multi || !get_function || !get_attribute) {
    fmt::print("multi-device launch: not in this driver, skipped\n");
    return;
  }
  std::vector<CUDA_LAUNCH_PARAMS> launches(gpus.size());
  std::vector<int> ordinals(gpus.size());
  std::vector<void*> params(2 * gpus.size());
  std::vector<Gpu*> all;
  for (std::size_t d = 0; d < gpus.size(); ++d) {
    Gpu& g = gpus[d];
    int supported = 0;
    if (get_attribute(&supported, CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH, g.ordinal) != CUDA_SUCCESS ||
        !supported) {
      fmt::print("multi-device launch: GPU {} does not support it, skipped\n", g.ordinal);
      return;
    }
    CHECK(cudaSetDevice(g.ordinal));
    CUfunction f = nullptr;
    if (get_function(&f, reinterpret_cast<CUkernel>(g.kernel)) != CUDA_SUCCESS) {
      fmt::print("multi-device launch: cuKernelGetFunction failed on GPU {}, skipped\n", g.ordinal);
      return;
    }
    ordinals[d] = g.ordinal;
    params[2 * d] = &args;
    params[2 * d + 1] = &ordinals[d];
    launches[d] = CUDA_LAUNCH_PARAMS{f, 4, 1, 1, 256, 1, 1, 0, reinterpret_cast<CUstream>(g.stream), &params[2 * d]};
    all.push_back(&g);
  }
  CHECK(cudaSetDevice(gpus[0].ordinal));
  const unsigned flags = CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC |
                         CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC;
  const std::string name = fmt::format("multi-device launch ({} GPU{})", gpus.size(), gpus.size() > 1 ? "s" : "");
  measure(name.c_str(), all, calls, [&] {
    if (const CUresult r = multi(launches.data(), static_cast<unsigned>(launches.size()), flags); r != CUDA_SUCCESS) {
      fmt::print("cuLaunchCooperativeKernelMultiDevice failed: CUresult {}\n", static_cast<int>(r));
      std::exit(1);
    }
  });
}

// GPU 1 without a kernel: the cost of a call if GPU 0's kernel did the work and GPU 1's stream only took part through
// stream memory operations (cuStreamBatchMemOp). Each probe runs a one-warp handshake per call:
//   two-sided      both GPUs launch; each kernel signals the other GPU's flag, then waits for its own (the
//                  low-latency protocol's shape), from a helper thread per GPU as Communicator::run does
//   one-sided      GPU 1's stream signals GPU 0's flag and waits for its own (two memory operations, one driver
//                  call); GPU 0's kernel waits for its flag, then signals GPU 1's. The caller does both
//   one-sided, helper   the same, GPU 1's memory operations queued by a helper thread
void handshake_probes(std::vector<Gpu>& gpus, int calls) {
  using BatchMemOp = CUresult (*)(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned);
  const auto batch = driver_entry<BatchMemOp>("cuStreamBatchMemOp", 12000);
  if (!batch) {
    fmt::print("cuStreamBatchMemOp: not in this driver, handshake probes skipped\n");
    return;
  }
  Gpu& g0 = gpus[0];
  Gpu& g1 = gpus[1];
  for (Gpu* a : {&g0, &g1}) {
    CHECK(cudaSetDevice(a->ordinal));
    const cudaError_t e = cudaDeviceEnablePeerAccess(a == &g0 ? g1.ordinal : g0.ordinal, 0);
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CHECK(e);
    (void)cudaGetLastError();
  }
  unsigned long long value = 0;
  const auto launch = [](Gpu& g, cudaKernel_t k, unsigned long long* signal, unsigned long long* wait,
                         unsigned long long v) {
    void* params[] = {&signal, &wait, &v};
    CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(k), dim3(1), dim3(32), params, 0, g.stream));
  };
  // GPU 1's part of a one-sided call: signal GPU 0, then hold the stream until GPU 0's kernel signals back.
  const auto memops = [&](unsigned long long v, bool wait) {
    CUstreamBatchMemOpParams ops[2] = {};
    ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    ops[0].writeValue.address = reinterpret_cast<CUdeviceptr>(wait ? g0.flag : g1.flag);
    ops[0].writeValue.value64 = v;
    ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
    ops[1].waitValue.address = reinterpret_cast<CUdeviceptr>(g1.flag);
    ops[1].waitValue.value64 = v;
    ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    if (const CUresult r = batch(reinterpret_cast<CUstream>(g1.stream), 2, ops, 0); r != CUDA_SUCCESS) {
      fmt::print("cuStreamBatchMemOp failed: CUresult {}\n", static_cast<int>(r));
      std::exit(1);
    }
  };
  CHECK(cudaSetDevice(g1.ordinal));
  measure("GPU 1 memory ops (write, wait), alone", {&g1}, calls, [&] { memops(++value, false); });

  // One spinning helper on GPU 1 running `work` once per ticket.
  std::atomic<long> ticket{0}, done{0};
  std::atomic<bool> quit{false};
  std::function<void()> work;
  std::thread helper([&] {
    CHECK(cudaSetDevice(g1.ordinal));
    long seen = 0;
    while (!quit.load(std::memory_order_acquire)) {
      const long t = ticket.load(std::memory_order_acquire);
      if (t == seen) continue;
      seen = t;
      work();
      done.fetch_add(1, std::memory_order_acq_rel);
    }
  });
  long expected = 0;
  const auto with_helper = [&](const std::function<void()>& own) {
    ticket.fetch_add(1, std::memory_order_acq_rel);
    own();
    ++expected;
    while (done.load(std::memory_order_acquire) < expected) {
    }
  };
  unsigned long long v = 0;  // the call's value, read by the helper after the ticket's release
  work = [&] { launch(g1, g1.signal_wait, g0.flag, g1.flag, v); };
  CHECK(cudaSetDevice(g0.ordinal));
  measure("two-sided handshake, helper", {&g0, &g1}, calls, [&] {
    v = ++value;
    with_helper([&] { launch(g0, g0.signal_wait, g1.flag, g0.flag, v); });
  });
  measure("one-sided handshake, caller", {&g0, &g1}, calls, [&] {
    const unsigned long long c = ++value;
    CHECK(cudaSetDevice(g1.ordinal));
    memops(c, true);
    CHECK(cudaSetDevice(g0.ordinal));
    launch(g0, g0.wait_signal, g1.flag, g0.flag, c);
  });
  work = [&] { memops(v, true); };
  CHECK(cudaSetDevice(g0.ordinal));
  measure("one-sided handshake, helper", {&g0, &g1}, calls, [&] {
    v = ++value;
    with_helper([&] { launch(g0, g0.wait_signal, g1.flag, g0.flag, v); });
  });
  quit.store(true, std::memory_order_release);
  helper.join();
}

}  // namespace
}  // namespace launch_bench

int main(int argc, char** argv) {
  using namespace launch_bench;
  int calls = 20000;
  CLI::App app{
      "What the host pays to start one kernel per GPU, the floor under every small collective's time: an empty\n"
      "kernel launched in several ways (one GPU, cooperative, GPUs in turn through the runtime and the driver, a\n"
      "helper thread per GPU, the library's CUkernel, bursts after an idle stream, one multi-device call), the\n"
      "host's time per call beside the GPUs'; then the host work of a call (each runtime query, an 8-byte\n"
      "allreduce). Needs a GPU; without one it says so and exits 0.\n"};
  app.name("canopy-bench-launch");
  app.add_option("CALLS", calls, "launches per timed loop")
      ->check(canopy::cli::whole_number(1, 10000000))
      ->capture_default_str();
  app.footer(
      "Examples:\n"
      "  canopy-bench-launch         20000 launches per loop\n"
      "  canopy-bench-launch 2000    a quicker, noisier run\n"
      "bench/device-run's step launch runs it (docs/development.md).");
  if (const auto status = canopy::cli::parse_command_line(app, argc, argv)) return *status;
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
    CHECK(cudaLibraryGetKernel(&g.signal_wait, library, "signal_wait"));
    CHECK(cudaLibraryGetKernel(&g.wait_signal, library, "wait_signal"));
    CHECK(cudaMalloc(reinterpret_cast<void**>(&g.flag), sizeof(unsigned long long)));
    CHECK(cudaMemset(g.flag, 0, sizeof(unsigned long long)));
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
  handle_probes(g0, args, calls);
  burst_probes(g0, args);
  multi_device_probe(gpus, args, calls);
  if (gpus.size() < 2) {
    call_pieces(g0, calls);
    allreduce_calls(gpus, args, calls);
    return 0;
  }

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
  handshake_probes(gpus, calls);

  call_pieces(g0, calls);
  allreduce_calls(gpus, args, calls);
  return 0;
}
