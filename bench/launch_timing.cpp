// The launch bench's runtime launch and its two timers (see launch_bench.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "bench/bench_check.hpp"
#include "bench/launch_bench.hpp"

namespace launch_bench {

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

void interleaved(const char* title, const std::vector<std::pair<const char*, std::function<void()>>>& probes,
                 int calls) {
  std::vector<std::vector<double>> rounds(probes.size());
  for (const auto& [name, call] : probes)
    for (int i = 0; i < 200; ++i) call();
  const int per_round = std::max(1, calls / 4);
  for (int round = 0; round < 11; ++round)
    for (std::size_t p = 0; p < probes.size(); ++p) {
      const auto t0 = Clock::now();
      for (int i = 0; i < per_round; ++i) probes[p].second();
      rounds[p].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / per_round);
    }
  fmt::print("{} (in turn, 11 rounds of {} calls)\n", title, per_round);
  for (std::size_t p = 0; p < probes.size(); ++p) {
    std::sort(rounds[p].begin(), rounds[p].end());
    fmt::print("  {:<44} host {:6.2f} us/call median, {:6.2f} fastest\n", probes[p].first, rounds[p][5], rounds[p][0]);
  }
  CHECK(cudaDeviceSynchronize());
}

}  // namespace launch_bench
