// copy_timing: the GPU side of measure_links (`canopy detect --measure`): the buffers, streams and events it takes,
// and timed peer copies one way, both ways at once, and to and from pinned host memory. Each rate is the median of
// options.repeats copies after options.warmups, timed by CUDA events on one non-blocking stream per GPU, in GB/s.
// Every CUDA failure throws canopy::Error naming the call; CopyResources releases what was taken however it ends.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include "runtime/detect/measure_links.hpp"

namespace canopy {

// Everything measure_links allocates or switches on, released (errors ignored) however it ends.
struct CopyResources {
  int previous_device = 0;
  std::map<int, void*> src, dst;
  std::map<int, cudaStream_t> streams;
  std::map<int, std::pair<cudaEvent_t, cudaEvent_t>> events;
  std::vector<std::pair<int, int>> peer_access;  // (device, peer) this code enabled
  void* host_src = nullptr;                      // pinned (cudaHostAlloc), shared by every GPU's host copies
  void* host_dst = nullptr;

  ~CopyResources();
};

// `device`'s source and destination buffers of `bytes`, its stream and its two events (once per device).
void prepare_device(CopyResources& r, int device, std::size_t bytes);
// The pinned host buffers of the host copies (once).
void prepare_host(CopyResources& r, std::size_t bytes);
// Lets `device` reach `peer`'s memory when the hardware allows it (without it, peer copies are staged through the
// host); whether peer access is on.
bool enable_peer_access(CopyResources& r, int device, int peer);

// Copies `from` -> `to` (CUDA ordinals, both prepared).
double time_copies(CopyResources& r, int from, int to, const MeasureOptions& options);
// Copies `a` -> `b` and `b` -> `a` at once, one on each device's stream: the rate of each direction.
std::pair<double, double> time_duplex(CopyResources& r, int a, int b, const MeasureOptions& options);
// Copies between `device` and the pinned host buffers: device to host when `to_host`, else host to device.
double time_host_copies(CopyResources& r, int device, bool to_host, const MeasureOptions& options);

}  // namespace canopy
