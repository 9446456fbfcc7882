// copy_timing: timed peer and host copies on the GPUs for measure_links (see the header).
#include "runtime/detect/copy_timing.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/cuda/cuda_check.hpp"

namespace canopy {
namespace {

// GB/s of copies of `bytes` that took `ms` milliseconds each: the median's rate.
double median_rate(std::vector<float> ms, std::size_t bytes) {
  std::sort(ms.begin(), ms.end());
  const double median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  return static_cast<double>(bytes) / (std::max(median, 1e-6) * 1e-3) / 1e9;
}

// Puts the copy `enqueue(stream)` on `device`'s stream between its two events.
template <typename Enqueue>
void start_timed(CopyResources& r, int device, const Enqueue& enqueue) {
  CANOPY_CUDA_CHECK(cudaSetDevice(device));
  const cudaStream_t s = r.streams.at(device);
  CANOPY_CUDA_CHECK(cudaEventRecord(r.events.at(device).first, s));
  enqueue(s);
  CANOPY_CUDA_CHECK(cudaEventRecord(r.events.at(device).second, s));
}

// Milliseconds of the copy start_timed put on `device`'s stream, once it is done.
float finish_timed(CopyResources& r, int device) {
  CANOPY_CUDA_CHECK(cudaSetDevice(device));
  const auto [start, stop] = r.events.at(device);
  CANOPY_CUDA_CHECK(cudaEventSynchronize(stop));
  float elapsed = 0;
  CANOPY_CUDA_CHECK(cudaEventElapsedTime(&elapsed, start, stop));
  return elapsed;
}

// The rate of the copy `enqueue(stream)` puts on `device`'s stream: the median of options.repeats timed copies
// after options.warmups untimed ones, GB/s.
template <typename Enqueue>
double time_copies_on(CopyResources& r, int device, const MeasureOptions& options, const Enqueue& enqueue) {
  std::vector<float> ms;
  for (int i = 0; i < options.warmups + options.repeats; ++i) {
    start_timed(r, device, enqueue);
    const float elapsed = finish_timed(r, device);
    if (i >= options.warmups) ms.push_back(elapsed);
  }
  return median_rate(std::move(ms), options.bytes);
}

// cudaMemcpyPeerAsync of options.bytes from `from`'s source buffer to `to`'s destination buffer.
auto peer_copy(CopyResources& r, int from, int to, const MeasureOptions& options) {
  return [&r, from, to, &options](cudaStream_t s) {
    CANOPY_CUDA_CHECK(cudaMemcpyPeerAsync(r.dst.at(to), to, r.src.at(from), from, options.bytes, s));
  };
}

}  // namespace

CopyResources::~CopyResources() {
  for (const auto& [device, peer] : peer_access)
    if (cudaSetDevice(device) == cudaSuccess) (void)cudaDeviceDisablePeerAccess(peer);
  for (const auto& [device, e] : events)
    if (cudaSetDevice(device) == cudaSuccess) {
      (void)cudaEventDestroy(e.first);
      (void)cudaEventDestroy(e.second);
    }
  for (const auto& [device, s] : streams)
    if (cudaSetDevice(device) == cudaSuccess) (void)cudaStreamDestroy(s);
  for (auto* buffers : {&src, &dst})
    for (const auto& [device, p] : *buffers)
      if (cudaSetDevice(device) == cudaSuccess) (void)cudaFree(p);
  for (void* p : {host_src, host_dst})
    if (p) (void)cudaFreeHost(p);
  (void)cudaSetDevice(previous_device);
  (void)cudaGetLastError();
}

void prepare_device(CopyResources& r, int device, std::size_t bytes) {
  if (r.streams.count(device)) return;
  CANOPY_CUDA_CHECK(cudaSetDevice(device));
  void* p = nullptr;
  CANOPY_CUDA_CHECK(cudaMalloc(&p, bytes));
  r.src[device] = p;
  CANOPY_CUDA_CHECK(cudaMemset(p, 1, bytes));
  CANOPY_CUDA_CHECK(cudaMalloc(&p, bytes));
  r.dst[device] = p;
  CANOPY_CUDA_CHECK(cudaMemset(p, 0, bytes));
  cudaStream_t s = nullptr;
  CANOPY_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  r.streams[device] = s;
  cudaEvent_t start = nullptr, stop = nullptr;
  CANOPY_CUDA_CHECK(cudaEventCreate(&start));
  r.events[device].first = start;
  CANOPY_CUDA_CHECK(cudaEventCreate(&stop));
  r.events[device].second = stop;
  CANOPY_CUDA_CHECK(cudaDeviceSynchronize());
}

// The pinned host buffers of the host copies: portable, so every GPU's copies use them as pinned memory.
void prepare_host(CopyResources& r, std::size_t bytes) {
  if (r.host_src) return;
  CANOPY_CUDA_CHECK(cudaHostAlloc(&r.host_src, bytes, cudaHostAllocPortable));
  std::memset(r.host_src, 1, bytes);
  CANOPY_CUDA_CHECK(cudaHostAlloc(&r.host_dst, bytes, cudaHostAllocPortable));
  std::memset(r.host_dst, 0, bytes);
}

// Lets `device` reach `peer`'s memory when the hardware allows it; without it, peer copies are staged through the
// host. Returns whether peer access is on.
bool enable_peer_access(CopyResources& r, int device, int peer) {
  int can = 0;
  CANOPY_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, peer));
  if (!can) return false;
  CANOPY_CUDA_CHECK(cudaSetDevice(device));
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // on already (by the caller, who keeps it, or for the reverse pair, recorded then)
    return true;
  }
  if (e == cudaErrorTooManyPeers) {
    (void)cudaGetLastError();  // the platform maps only so many peers: this pair's copies are staged
    return false;
  }
  CANOPY_CUDA_CHECK(e);
  r.peer_access.emplace_back(device, peer);
  return true;
}

double time_copies(CopyResources& r, int from, int to, const MeasureOptions& options) {
  return time_copies_on(r, from, options, peer_copy(r, from, to, options));
}

// The two copies `a` -> `b` and `b` -> `a` on the two devices' streams at once: the median rate of each direction over
// options.repeats rounds after options.warmups, GB/s (each timed on its own stream; at options.bytes the few
// microseconds between the two starts are noise).
std::pair<double, double> time_duplex(CopyResources& r, int a, int b, const MeasureOptions& options) {
  std::vector<float> ms[2];
  const int from[2] = {a, b}, to[2] = {b, a};
  for (int i = 0; i < options.warmups + options.repeats; ++i) {
    for (int k = 0; k < 2; ++k) start_timed(r, from[k], peer_copy(r, from[k], to[k], options));
    for (int k = 0; k < 2; ++k) {
      const float elapsed = finish_timed(r, from[k]);
      if (i >= options.warmups) ms[k].push_back(elapsed);
    }
  }
  return {median_rate(std::move(ms[0]), options.bytes), median_rate(std::move(ms[1]), options.bytes)};
}

// Copies between `device` and the pinned host buffers: device to host when `to_host`, else host to device.
double time_host_copies(CopyResources& r, int device, bool to_host, const MeasureOptions& options) {
  return time_copies_on(r, device, options, [&](cudaStream_t s) {
    if (to_host)
      CANOPY_CUDA_CHECK(cudaMemcpyAsync(r.host_dst, r.src.at(device), options.bytes, cudaMemcpyDeviceToHost, s));
    else
      CANOPY_CUDA_CHECK(cudaMemcpyAsync(r.dst.at(device), r.host_src, options.bytes, cudaMemcpyHostToDevice, s));
  });
}

}  // namespace canopy
