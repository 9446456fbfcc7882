// DeviceOrder's life: its events made and destroyed, and waiting for every launch it ordered.
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/launch/prepared_collective.hpp"

namespace canopy {

DeviceOrder make_device_order(std::span<const int> ordinals) {
  const std::size_t devices = ordinals.size();
  DeviceOrder order;
  order.done.assign(devices, nullptr);
  order.stream_id.assign(devices, 0);
  order.used.assign(devices, false);
  order.switched.assign(devices, false);
  CurrentDevice keep;
  try {
    for (std::size_t d = 0; d < devices; ++d) {
      CANOPY_CUDA_CHECK(cudaSetDevice(ordinals[d]));
      CANOPY_CUDA_CHECK(cudaEventCreateWithFlags(&order.done[d], cudaEventDisableTiming));
    }
  } catch (...) {
    destroy_device_order(order);
    throw;
  }
  return order;
}

void destroy_device_order(DeviceOrder& order) {
  for (cudaEvent_t& e : order.done) {
    if (e) (void)cudaEventDestroy(e);
    e = nullptr;
  }
  (void)cudaGetLastError();
}

cudaError_t order_stream(DeviceOrder& order, int d, cudaStream_t stream, unsigned long long stream_id) {
  cudaError_t e = cudaSuccess;
  if (order.used[d] && order.stream_id[d] != stream_id) {
    if (order.switched[d]) {
      e = cudaStreamWaitEvent(stream, order.done[d], 0);
    } else {
      e = cudaDeviceSynchronize();
      order.switched[d] = 1;
    }
  }
  if (e == cudaSuccess) {
    order.stream_id[d] = stream_id;
    order.used[d] = 1;
  }
  return e;
}

cudaError_t mark_done(DeviceOrder& order, int d, cudaStream_t stream) {
  return order.switched[d] ? cudaEventRecord(order.done[d], stream) : cudaSuccess;
}

void wait_for_launches(const DeviceOrder& order, std::span<const int> ordinals) {
  CurrentDevice keep;
  for (std::size_t d = 0; d < order.done.size(); ++d)
    if (order.used[d]) {
      (void)cudaSetDevice(ordinals[d]);
      (void)cudaDeviceSynchronize();
    }
  (void)cudaGetLastError();
}

}  // namespace canopy
