// The launch bench's shared parts (bench/launch_bench.cpp runs them): the GPUs it launches on, the empty kernel's
// argument, the runtime launch every probe compares with, the two ways it times probes (measure: loops of one probe,
// host beside GPU time; interleaved: probes taking turns), and the probes of a call's host work beside its launch
// (launch_calls.cpp).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <functional>
#include <utility>
#include <vector>

#include "runtime/cuda/driver_api.hpp"

namespace launch_bench {

using Clock = std::chrono::steady_clock;

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
  cudaKernel_t signal_wait = nullptr, wait_signal = nullptr;  // the handshake probes' kernels
  unsigned long long* flag = nullptr;                         // this GPU's flag, written by the other GPU
  CUcontext context = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};

// The empty kernel on g's stream, 4 blocks of 256 threads, through cudaLaunchKernelExC (cooperative or not).
cudaError_t launch_runtime(Gpu& g, Args& args, bool cooperative);

// Host and GPU microseconds per call of `call` (which launches once on each GPU in `gpus`), median of 5 loops.
void measure(const char* name, std::vector<Gpu*> gpus, int calls, const std::function<void()>& call);

// Host microseconds per call of each probe, the probes taking turns for 11 rounds of calls/4 calls each (so a drift
// of the machine during the run reaches them all alike): the median round and the fastest.
void interleaved(const char* title, const std::vector<std::pair<const char*, std::function<void()>>>& probes,
                 int calls);

// launch_calls.cpp: each runtime and driver query a call makes, and check_call, alone in a loop (GPU g's buffer and
// stream); then whole 8-byte allreduces through the Communicator beside a bare launch.
void call_pieces(Gpu& g, int calls);
void allreduce_calls(std::vector<Gpu>& gpus, Args& args, int calls);

}  // namespace launch_bench
