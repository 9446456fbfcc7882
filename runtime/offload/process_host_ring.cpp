// ProcessHostRing (see process_host_ring.hpp).
#include "runtime/offload/process_host_ring.hpp"

#include <cuda.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/offload/ring_sequence.hpp"

namespace canopy {

namespace {

constexpr std::uint32_t kRingTag = 0x80000002u;  // beside the call counters' (call_counters.cpp)
constexpr std::size_t kWordsBytes = 4096;        // the fill words, then every process's drain words per slot

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

// A ring's chunk count: release() reads it beside a call that raises it.
std::uint64_t chunks_of(const std::uint64_t& chunks) {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(chunks)).load(std::memory_order_relaxed);
}

std::size_t ring_bytes() { return ProcessHostRing::kSlots * ProcessHostRing::kSlotBytes + kWordsBytes; }

}  // namespace

Status ProcessHostRing::share(FdChannel& channel, int process, int processes, int ordinal,
                              std::unique_ptr<ProcessHostRing>* out) {
  if (processes < 1 || static_cast<std::size_t>(kSlots) * (1 + processes) * sizeof(std::uint32_t) > kWordsBytes)
    return Status(StatusCode::invalid_argument,
                  fmt::format("the host ring across processes holds words for at most {} processes, not {}",
                              kWordsBytes / sizeof(std::uint32_t) / kSlots - 1, processes));
  if (!wait_value32() || !write_value32())
    return Status(StatusCode::unsupported, "the host ring across processes needs the driver's stream memory "
                                           "operations (cuStreamWaitValue32, cuStreamWriteValue32), which this "
                                           "driver lacks: leave the host path off across processes");
  std::unique_ptr<ProcessHostRing> r(new ProcessHostRing());
  r->process_ = process;
  r->processes_ = processes;
  r->ordinal_ = ordinal;
  r->rings_.resize(processes);
  const std::size_t bytes = ring_bytes();
  const int fd = memfd_create("canopy-host-ring", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int e = errno;
    if (fd >= 0) close(fd);
    return Status(StatusCode::internal, fmt::format("the host ring's shared memory: {}", std::strerror(e)));
  }
  const auto map = [&](int p, int from_fd) {
    void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, from_fd, 0);
    if (base == MAP_FAILED)
      return Status(StatusCode::internal,
                    fmt::format("mapping process {}'s host ring: {}", p, std::strerror(errno)));
    r->rings_[p].base = static_cast<char*>(base);
    r->rings_[p].bytes = bytes;
    return Status();
  };
  Status s = map(process, fd);
  if (s.ok()) {
    std::vector<int> others;
    for (int p = 0; p < processes; ++p)
      if (p != process) others.push_back(p);
    s = channel.exchange(kRingTag, std::span<const int>(&fd, 1), "host ring", others, others,
                         [&](int p, FdMessage& m) {
                           if (m.fds.size() != 1)
                             return Status(StatusCode::internal,
                                           fmt::format("process {} sent {} descriptors for its host ring", p,
                                                       m.fds.size()));
                           return map(p, m.fds[0].get());
                         });
  }
  close(fd);
  if (!s.ok()) return s;  // the destructor unmaps what was mapped
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) return cuda_failed("cudaSetDevice", e);
  for (Ring& ring : r->rings_) {
    if (cudaError_t e = cudaHostRegister(ring.base, ring.bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
        e != cudaSuccess)
      return cuda_failed("cudaHostRegister", e);
    ring.registered = true;
    void* device = nullptr;
    if (cudaError_t e = cudaHostGetDevicePointer(&device, ring.base, 0); e != cudaSuccess)
      return cuda_failed("cudaHostGetDevicePointer", e);
    ring.device = reinterpret_cast<std::uintptr_t>(device);
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
  for (Ring& ring : rings_) {
    if (ring.registered) (void)cudaHostUnregister(ring.base);
    if (ring.base) munmap(ring.base, ring.bytes);
  }
  (void)cudaGetLastError();
}

std::uint32_t* ProcessHostRing::fill_word(int ring, int slot) const {
  return reinterpret_cast<std::uint32_t*>(rings_[ring].base + kSlots * kSlotBytes) + slot;
}

std::uint32_t* ProcessHostRing::drain_word(int ring, int slot, int process) const {
  return reinterpret_cast<std::uint32_t*>(rings_[ring].base + kSlots * kSlotBytes) + kSlots + slot * processes_ +
         process;
}

Status ProcessHostRing::wait_word(int ring, const std::uint32_t* word, std::uint32_t value) {
  return word_operation(true, ring, word, value);
}

Status ProcessHostRing::write_word(int ring, std::uint32_t* word, std::uint32_t value) {
  return word_operation(false, ring, word, value);
}

Status ProcessHostRing::word_operation(bool wait, int ring, const std::uint32_t* word, std::uint32_t value) {
  const Ring& g = rings_[ring];
  const CUdeviceptr at = g.device + (reinterpret_cast<const char*>(word) - g.base);
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
  if (processes_ < 2) return Status();
  Ring& ring = rings_[process_];
  const char* from = static_cast<const char*>(src);
  for (const RingChunk& c : ring_chunks(chunks_of(ring.chunks), bytes, kSlotBytes, kSlots)) {
    if (c.wait_drained)
      for (int p = 0; p < processes_; ++p)
        if (p != process_)
          if (Status s = wait_word(process_, drain_word(process_, c.slot, p), c.drained); !s.ok()) return s;
    char* slot = ring.base + static_cast<std::size_t>(c.slot) * kSlotBytes;
    if (cudaError_t e = cudaMemcpyAsync(slot, from + c.offset, c.bytes, cudaMemcpyDeviceToHost, side_);
        e != cudaSuccess)
      return cuda_failed("a copy into the host ring", e);
    if (Status s = write_word(process_, fill_word(process_, c.slot), c.filled); !s.ok()) return s;
    std::atomic_ref<std::uint64_t>(ring.chunks).fetch_add(1, std::memory_order_relaxed);
  }
  return Status();
}

Status ProcessHostRing::receive(int root, std::span<void* const> dst, std::size_t bytes) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) return cuda_failed("cudaSetDevice", e);
  Ring& ring = rings_[root];
  for (const RingChunk& c : ring_chunks(chunks_of(ring.chunks), bytes, kSlotBytes, kSlots)) {
    if (Status s = wait_word(root, fill_word(root, c.slot), c.filled); !s.ok()) return s;
    const char* slot = ring.base + static_cast<std::size_t>(c.slot) * kSlotBytes;
    for (void* d : dst)
      if (cudaError_t e = cudaMemcpyAsync(static_cast<char*>(d) + c.offset, slot, c.bytes, cudaMemcpyHostToDevice,
                                          side_);
          e != cudaSuccess)
        return cuda_failed("a copy out of the host ring", e);
    if (Status s = write_word(root, drain_word(root, c.slot, process_), c.filled); !s.ok()) return s;
    std::atomic_ref<std::uint64_t>(ring.chunks).fetch_add(1, std::memory_order_relaxed);
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

void ProcessHostRing::release() {
  for (int ring = 0; ring < processes_; ++ring) {
    // Every wait queued so far is for a value at most the ring's chunks.
    const auto largest = static_cast<std::uint32_t>(chunks_of(rings_[ring].chunks) + kSlots);
    const std::uint32_t ahead = ring_release_value(largest);
    for (int slot = 0; slot < kSlots; ++slot) {
      std::atomic_ref<std::uint32_t>(*fill_word(ring, slot)).store(ahead, std::memory_order_release);
      for (int p = 0; p < processes_; ++p)
        std::atomic_ref<std::uint32_t>(*drain_word(ring, slot, p)).store(ahead, std::memory_order_release);
    }
  }
}

}  // namespace canopy
