// StreamWords (see stream_words.hpp).
#include "runtime/offload/stream_words.hpp"

#include <cuda.h>
#include <fmt/format.h>

#include <algorithm>

#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

namespace {

using WaitValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
using WriteValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

WaitValue32 wait_value32() {
  static const auto f = reinterpret_cast<WaitValue32>(driver_entry_point("cuStreamWaitValue32", 12000));
  return f;
}
WriteValue32 write_value32() {
  static const auto f = reinterpret_cast<WriteValue32>(driver_entry_point("cuStreamWriteValue32", 12000));
  return f;
}

}  // namespace

bool StreamWords::supported() { return wait_value32() && write_value32(); }

Status StreamWords::failed(std::string_view what, cudaError_t e) const {
  (void)cudaGetLastError();
  return Status(StatusCode::cuda_error, fmt::format("{}: {} failed: {}", who_, what, cudaGetErrorString(e)));
}

Status StreamWords::create(std::string who, int ordinal, std::span<void* const> regions, std::size_t bytes,
                           int lanes) {
  who_ = std::move(who);
  ordinal_ = ordinal;
  if (!supported())
    return Status(StatusCode::unsupported,
                  fmt::format("{} needs the driver's stream memory operations (cuStreamWaitValue32, "
                              "cuStreamWriteValue32), which this driver lacks",
                              who_));
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) return failed("cudaSetDevice", e);
  for (void* r : regions) {
    if (cudaError_t e = cudaHostRegister(r, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped); e != cudaSuccess)
      return failed("cudaHostRegister", e);
    regions_.push_back(r);
    void* device = nullptr;
    if (cudaError_t e = cudaHostGetDevicePointer(&device, r, 0); e != cudaSuccess)
      return failed("cudaHostGetDevicePointer", e);
    device_.push_back(reinterpret_cast<std::uintptr_t>(device));
  }
  for (int i = 0; i < lanes; ++i) {
    Lane& lane = lanes_.emplace_back();
    if (cudaError_t e = cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking); e != cudaSuccess)
      return failed("cudaStreamCreateWithFlags", e);
    if (cudaError_t e = cudaEventCreateWithFlags(&lane.done, cudaEventDisableTiming); e != cudaSuccess)
      return failed("cudaEventCreateWithFlags", e);
  }
  if (cudaError_t e = cudaEventCreateWithFlags(&forked_, cudaEventDisableTiming); e != cudaSuccess)
    return failed("cudaEventCreateWithFlags", e);
  return Status();
}

StreamWords::~StreamWords() {
  CurrentDevice keep;
  (void)cudaSetDevice(ordinal_);
  for (Lane& lane : lanes_) {
    if (lane.stream) (void)cudaStreamSynchronize(lane.stream);
    if (lane.stream) (void)cudaStreamDestroy(lane.stream);
    if (lane.done) (void)cudaEventDestroy(lane.done);
  }
  if (forked_) (void)cudaEventDestroy(forked_);
  for (void* r : regions_) (void)cudaHostUnregister(r);
  (void)cudaGetLastError();
}

Status StreamWords::operation(bool wait, int region, const std::uint32_t* word, std::uint32_t value, int lane) {
  const CUdeviceptr at =
      device_[region] + (reinterpret_cast<const char*>(word) - static_cast<const char*>(regions_[region]));
  const auto stream = reinterpret_cast<CUstream>(lanes_[lane].stream);
  const CUresult r = wait ? wait_value32()(stream, at, value, CU_STREAM_WAIT_VALUE_GEQ)
                          : write_value32()(stream, at, value, CU_STREAM_WRITE_VALUE_DEFAULT);
  if (r != CUDA_SUCCESS)
    return Status(StatusCode::cuda_error, fmt::format("{}: {} failed (CUresult {})", who_,
                                                      wait ? "cuStreamWaitValue32" : "cuStreamWriteValue32",
                                                      static_cast<int>(r)));
  return Status();
}

Status StreamWords::wait(int region, const std::uint32_t* word, std::uint32_t value, int lane) {
  return operation(true, region, word, value, lane);
}

Status StreamWords::write(int region, const std::uint32_t* word, std::uint32_t value, int lane) {
  return operation(false, region, word, value, lane);
}

// The side streams fork and join touch: the first `lanes` (all where 0 or more than there are).
std::span<const StreamWords::Lane> StreamWords::used(int lanes) const {
  const std::size_t n = lanes > 0 ? std::min(static_cast<std::size_t>(lanes), lanes_.size()) : lanes_.size();
  return std::span<const Lane>(lanes_).first(n);
}

Status StreamWords::fork(std::span<const cudaStream_t> streams, int lanes) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) return failed("cudaSetDevice", e);
  for (cudaStream_t s : streams) {
    if (cudaError_t e = cudaEventRecord(forked_, s); e != cudaSuccess) return failed("cudaEventRecord", e);
    for (const Lane& lane : used(lanes))
      if (cudaError_t e = cudaStreamWaitEvent(lane.stream, forked_); e != cudaSuccess)
        return failed("cudaStreamWaitEvent", e);
  }
  return Status();
}

Status StreamWords::join(std::span<const cudaStream_t> streams, int lanes) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) return failed("cudaSetDevice", e);
  for (const Lane& lane : used(lanes)) {
    if (cudaError_t e = cudaEventRecord(lane.done, lane.stream); e != cudaSuccess) return failed("cudaEventRecord", e);
    for (cudaStream_t s : streams)
      if (cudaError_t e = cudaStreamWaitEvent(s, lane.done); e != cudaSuccess) return failed("cudaStreamWaitEvent", e);
  }
  return Status();
}

Status StreamWords::fork_lanes(cudaStream_t stream, std::span<const int> lanes) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) return failed("cudaSetDevice", e);
  if (cudaError_t e = cudaEventRecord(forked_, stream); e != cudaSuccess) return failed("cudaEventRecord", e);
  for (int lane : lanes)
    if (cudaError_t e = cudaStreamWaitEvent(lanes_[lane].stream, forked_); e != cudaSuccess)
      return failed("cudaStreamWaitEvent", e);
  return Status();
}

Status StreamWords::join_lanes(std::span<const int> lanes, cudaStream_t stream) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) return failed("cudaSetDevice", e);
  for (int lane : lanes) {
    const Lane& l = lanes_[lane];
    if (cudaError_t e = cudaEventRecord(l.done, l.stream); e != cudaSuccess) return failed("cudaEventRecord", e);
    if (cudaError_t e = cudaStreamWaitEvent(stream, l.done); e != cudaSuccess) return failed("cudaStreamWaitEvent", e);
  }
  return Status();
}

bool StreamWords::idle() const {
  CurrentDevice keep;
  if (cudaSetDevice(ordinal_) != cudaSuccess) return false;
  for (const Lane& lane : lanes_)
    if (cudaStreamQuery(lane.stream) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
  return true;
}

Status StreamWords::follow(int lane, int after) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) return failed("cudaSetDevice", e);
  if (cudaError_t e = cudaEventRecord(lanes_[after].done, lanes_[after].stream); e != cudaSuccess)
    return failed("cudaEventRecord", e);
  if (cudaError_t e = cudaStreamWaitEvent(lanes_[lane].stream, lanes_[after].done); e != cudaSuccess)
    return failed("cudaStreamWaitEvent", e);
  return Status();
}

Status StreamWords::synchronize() {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) return failed("cudaSetDevice", e);
  for (const Lane& lane : lanes_)
    if (cudaError_t e = cudaStreamSynchronize(lane.stream); e != cudaSuccess) return failed("cudaStreamSynchronize", e);
  return Status();
}

}  // namespace canopy
