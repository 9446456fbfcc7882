// ProcessHostRing (see process_host_ring.hpp).
#include "runtime/offload/process_host_ring.hpp"

#include <cuda.h>
#include <fmt/format.h>

#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/offload/ring_sequence.hpp"

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

Status cuda_failed(const char* what, cudaError_t e) {
  (void)cudaGetLastError();
  return Status(StatusCode::cuda_error, fmt::format("the host ring across processes: {} failed: {}", what,
                                                    cudaGetErrorString(e)));
}

}  // namespace

Status ProcessHostRing::share(FdChannel& channel, int process, int processes, int ordinal,
                              std::unique_ptr<ProcessHostRing>* out) {
  if (!wait_value32() || !write_value32())
    return Status(StatusCode::unsupported, "the host ring across processes needs the driver's stream memory "
                                           "operations (cuStreamWaitValue32, cuStreamWriteValue32), which this "
                                           "driver lacks: leave the host path off across processes");
  std::unique_ptr<ProcessHostRing> r(new ProcessHostRing());
  r->ordinal_ = ordinal;
  if (Status s = SharedRings::share(channel, process, processes, &r->rings_); !s.ok()) return s;
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) return cuda_failed("cudaSetDevice", e);
  r->device_.assign(processes, 0);
  r->registered_.assign(processes, false);
  for (int p = 0; p < processes; ++p) {
    char* base = r->rings_->base(p);
    if (cudaError_t e =
            cudaHostRegister(base, SharedRings::ring_bytes(), cudaHostRegisterPortable | cudaHostRegisterMapped);
        e != cudaSuccess)
      return cuda_failed("cudaHostRegister", e);
    r->registered_[p] = true;
    void* device = nullptr;
    if (cudaError_t e = cudaHostGetDevicePointer(&device, base, 0); e != cudaSuccess)
      return cuda_failed("cudaHostGetDevicePointer", e);
    r->device_[p] = reinterpret_cast<std::uintptr_t>(device);
  }
  if (cudaError_t e = cudaStreamCreateWithFlags(&r->side_, cudaStreamNonBlocking); e != cudaSuccess)
    return cuda_failed("cudaStreamCreateWithFlags", e);
  if (cudaError_t e = cudaEventCreateWithFlags(&r->forked_, cudaEventDisableTiming); e != cudaSuccess)
    return cuda_failed("cudaEventCreateWithFlags", e);
  if (cudaError_t e = cudaEventCreateWithFlags(&r->joined_, cudaEventDisableTiming); e != cudaSuccess)
    return cuda_failed("cudaEventCreateWithFlags", e);
  *out = std::move(r);
  return Status();
}

ProcessHostRing::~ProcessHostRing() {
  CurrentDevice keep;
  (void)cudaSetDevice(ordinal_);
  if (side_) (void)cudaStreamSynchronize(side_);
  if (side_) (void)cudaStreamDestroy(side_);
  if (forked_) (void)cudaEventDestroy(forked_);
  if (joined_) (void)cudaEventDestroy(joined_);
  for (std::size_t p = 0; p < registered_.size(); ++p)
    if (registered_[p]) (void)cudaHostUnregister(rings_->base(static_cast<int>(p)));
  (void)cudaGetLastError();
}

Status ProcessHostRing::word_operation(bool wait, int ring, const std::uint32_t* word, std::uint32_t value) {
  const CUdeviceptr at = device_[ring] + (reinterpret_cast<const char*>(word) - rings_->base(ring));
  // A write's default flags fence it behind the copies before it on the stream.
  const CUresult r = wait ? wait_value32()(side_, at, value, CU_STREAM_WAIT_VALUE_GEQ)
                          : write_value32()(side_, at, value, CU_STREAM_WRITE_VALUE_DEFAULT);
  if (r != CUDA_SUCCESS)
    return Status(StatusCode::cuda_error,
                  fmt::format("the host ring across processes: {} failed (CUresult {})",
                              wait ? "cuStreamWaitValue32" : "cuStreamWriteValue32", static_cast<int>(r)));
  return Status();
}

Status ProcessHostRing::fork(std::span<const cudaStream_t> streams) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) return cuda_failed("cudaSetDevice", e);
  for (cudaStream_t s : streams) {
    if (cudaError_t e = cudaEventRecord(forked_, s); e != cudaSuccess) return cuda_failed("cudaEventRecord", e);
    if (cudaError_t e = cudaStreamWaitEvent(side_, forked_); e != cudaSuccess)
      return cuda_failed("cudaStreamWaitEvent", e);
  }
  return Status();
}

Status ProcessHostRing::send(const void* src, std::span<void* const> local, std::size_t bytes) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) return cuda_failed("cudaSetDevice", e);
  for (void* dst : local)
    if (dst != src)
      if (cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, side_); e != cudaSuccess)
        return cuda_failed("a device copy of the staged bytes", e);
  const SharedRings& rings = *rings_;
  const int me = rings.process();
  if (rings.processes() < 2) return Status();
  const char* from = static_cast<const char*>(src);
  for (const RingChunk& c : ring_chunks(rings.chunks(me), bytes, kSlotBytes, kSlots)) {
    if (c.wait_drained)
      for (int p = 0; p < rings.processes(); ++p)
        if (p != me)
          if (Status s = word_operation(true, me, rings.drain_word(me, c.slot, p), c.drained); !s.ok()) return s;
    if (cudaError_t e = cudaMemcpyAsync(rings.slot(me, c.slot), from + c.offset, c.bytes, cudaMemcpyDeviceToHost,
                                        side_);
        e != cudaSuccess)
      return cuda_failed("a copy into the host ring", e);
    if (Status s = word_operation(false, me, rings.fill_word(me, c.slot), c.filled); !s.ok()) return s;
    rings_->count_chunk(me);
  }
  return Status();
}

Status ProcessHostRing::receive(int root, std::span<void* const> dst, std::size_t bytes) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) return cuda_failed("cudaSetDevice", e);
  const SharedRings& rings = *rings_;
  for (const RingChunk& c : ring_chunks(rings.chunks(root), bytes, kSlotBytes, kSlots)) {
    if (Status s = word_operation(true, root, rings.fill_word(root, c.slot), c.filled); !s.ok()) return s;
    for (void* d : dst)
      if (cudaError_t e = cudaMemcpyAsync(static_cast<char*>(d) + c.offset, rings.slot(root, c.slot), c.bytes,
                                          cudaMemcpyHostToDevice, side_);
          e != cudaSuccess)
        return cuda_failed("a copy out of the host ring", e);
    if (Status s = word_operation(false, root, rings.drain_word(root, c.slot, rings.process()), c.filled); !s.ok())
      return s;
    rings_->count_chunk(root);
  }
  return Status();
}

Status ProcessHostRing::join(std::span<const cudaStream_t> streams) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) return cuda_failed("cudaSetDevice", e);
  if (cudaError_t e = cudaEventRecord(joined_, side_); e != cudaSuccess) return cuda_failed("cudaEventRecord", e);
  for (cudaStream_t s : streams)
    if (cudaError_t e = cudaStreamWaitEvent(s, joined_); e != cudaSuccess)
      return cuda_failed("cudaStreamWaitEvent", e);
  return Status();
}

}  // namespace canopy
