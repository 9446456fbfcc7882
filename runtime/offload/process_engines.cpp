// ProcessEngines (see process_engines.hpp).
#include "runtime/offload/process_engines.hpp"

#include <cuda.h>
#include <fmt/format.h>

#include <atomic>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/offload/ring_sequence.hpp"

namespace canopy {

namespace {

constexpr std::uint32_t kEnginesTag = 0x80000003u;  // beside the call counters' and the host rings'

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

Status cuda_failed(std::string_view what, cudaError_t e) {
  (void)cudaGetLastError();
  return Status(StatusCode::cuda_error,
                fmt::format("the copy engines across processes: {} failed: {}", what, cudaGetErrorString(e)));
}

template <typename T>
T load(const T& x) {
  return std::atomic_ref<T>(const_cast<T&>(x)).load(std::memory_order_acquire);
}
template <typename T>
void store(T& x, T v) {
  std::atomic_ref<T>(x).store(v, std::memory_order_release);
}

}  // namespace

// A process's board. Calls alternate between two sets of buffers, so a receiver one call ahead does not overwrite
// what the root has not read yet; two ahead, it waits for `consumed`.
struct ProcessEngines::Board {
  std::uint32_t ready = 0;  // GPU: the owner's side stream reached this engine call
  std::uint32_t done = 0;   // GPU: the root's copies into the owner's buffers for this call are done
  std::uint32_t words_pad[30] = {};
  std::uint64_t published[2] = {};  // host, by call parity: the call whose buffers are in that set
  std::uint64_t consumed = 0;       // host: the last call whose buffers the root has mapped
  std::uint32_t ranks[2] = {};
  SharedBuffer buffers[2][kMaxRanks];
};

namespace {
constexpr std::size_t kBoardBytes = 8192;  // a board, in whole pages
}  // namespace

ProcessEngines::Board* ProcessEngines::board(int process) const {
  return static_cast<Board*>(memory_.at(process));
}

Status ProcessEngines::share(FdChannel& channel, int process, int ordinal, std::unique_ptr<ProcessEngines>* out) {
  static_assert(sizeof(Board) <= kBoardBytes);
  if (!wait_value32() || !write_value32())
    return Status(StatusCode::unsupported, "the copy engines across processes need the driver's stream memory "
                                           "operations (cuStreamWaitValue32, cuStreamWriteValue32), which this "
                                           "driver lacks: leave CANOPY_ENGINE_BYTES unset across processes");
  std::unique_ptr<ProcessEngines> e(new ProcessEngines());
  e->process_ = process;
  e->ordinal_ = ordinal;
  if (Status s = e->memory_.share(channel, kEnginesTag, "the copy engines' board", process, 2, kBoardBytes, true);
      !s.ok())
    return s;
  CurrentDevice keep;
  if (cudaError_t err = cudaSetDevice(ordinal); err != cudaSuccess) return cuda_failed("cudaSetDevice", err);
  for (int p = 0; p < 2; ++p) {
    if (cudaError_t err =
            cudaHostRegister(e->memory_.at(p), kBoardBytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
        err != cudaSuccess)
      return cuda_failed("cudaHostRegister", err);
    e->registered_[p] = true;
    void* device = nullptr;
    if (cudaError_t err = cudaHostGetDevicePointer(&device, e->memory_.at(p), 0); err != cudaSuccess)
      return cuda_failed("cudaHostGetDevicePointer", err);
    e->device_[p] = reinterpret_cast<std::uintptr_t>(device);
  }
  if (cudaError_t err = cudaStreamCreateWithFlags(&e->side_, cudaStreamNonBlocking); err != cudaSuccess)
    return cuda_failed("cudaStreamCreateWithFlags", err);
  if (cudaError_t err = cudaEventCreateWithFlags(&e->forked_, cudaEventDisableTiming); err != cudaSuccess)
    return cuda_failed("cudaEventCreateWithFlags", err);
  if (cudaError_t err = cudaEventCreateWithFlags(&e->joined_, cudaEventDisableTiming); err != cudaSuccess)
    return cuda_failed("cudaEventCreateWithFlags", err);
  *out = std::move(e);
  return Status();
}

ProcessEngines::~ProcessEngines() {
  CurrentDevice keep;
  (void)cudaSetDevice(ordinal_);
  if (side_) (void)cudaStreamSynchronize(side_);
  if (side_) (void)cudaStreamDestroy(side_);
  if (forked_) (void)cudaEventDestroy(forked_);
  if (joined_) (void)cudaEventDestroy(joined_);
  for (int p = 0; p < 2; ++p)
    if (registered_[p]) (void)cudaHostUnregister(memory_.at(p));
  (void)cudaGetLastError();
}

Status ProcessEngines::word(bool wait, int process, const std::uint32_t* w, std::uint32_t value) {
  const CUdeviceptr at =
      device_[process] + (reinterpret_cast<const char*>(w) - static_cast<const char*>(memory_.at(process)));
  const CUresult r = wait ? wait_value32()(side_, at, value, CU_STREAM_WAIT_VALUE_GEQ)
                          : write_value32()(side_, at, value, CU_STREAM_WRITE_VALUE_DEFAULT);
  if (r != CUDA_SUCCESS)
    return Status(StatusCode::cuda_error, fmt::format("the copy engines across processes: {} failed (CUresult {})",
                                                      wait ? "cuStreamWaitValue32" : "cuStreamWriteValue32",
                                                      static_cast<int>(r)));
  return Status();
}

Status ProcessEngines::fork(std::span<const cudaStream_t> streams) {
  for (cudaStream_t s : streams) {
    if (cudaError_t e = cudaEventRecord(forked_, s); e != cudaSuccess) return cuda_failed("cudaEventRecord", e);
    if (cudaError_t e = cudaStreamWaitEvent(side_, forked_); e != cudaSuccess)
      return cuda_failed("cudaStreamWaitEvent", e);
  }
  return Status();
}

Status ProcessEngines::join(std::span<const cudaStream_t> streams) {
  if (cudaError_t e = cudaEventRecord(joined_, side_); e != cudaSuccess) return cuda_failed("cudaEventRecord", e);
  for (cudaStream_t s : streams)
    if (cudaError_t e = cudaStreamWaitEvent(s, joined_); e != cudaSuccess) return cuda_failed("cudaStreamWaitEvent", e);
  return Status();
}

// Spins until `reached()` (the other process's host has got there), giving up when `failed` says so or at the
// deadline.
static Status wait_for(const std::function<bool()>& reached, const std::function<bool()>& failed,
                       std::chrono::milliseconds timeout, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (unsigned spins = 0; !reached(); ++spins) {
    if (failed && failed())
      return Status(StatusCode::remote_error, fmt::format("the copy engines across processes: {}: the "
                                                          "communicator failed meanwhile",
                                                          what));
    if (std::chrono::steady_clock::now() > deadline)
      return Status(StatusCode::remote_error,
                    fmt::format("the copy engines across processes: {} within {} ms: is the other process making "
                                "the same calls?",
                                what, timeout.count()));
    if (spins > 1000) std::this_thread::yield();
  }
  return Status();
}

Status ProcessEngines::broadcast(bool root, const void* src, std::span<void* const> dst, std::size_t bytes,
                                 std::span<const cudaStream_t> streams, const std::function<bool()>& failed,
                                 std::chrono::milliseconds timeout) {
  const std::uint64_t call = std::atomic_ref<std::uint64_t>(calls_).fetch_add(1, std::memory_order_relaxed) + 1;
  const auto seq = static_cast<std::uint32_t>(call);
  const int parity = static_cast<int>(call & 1);
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) return cuda_failed("cudaSetDevice", e);
  if (!root) {
    Board& mine = *board(process_);
    if (dst.size() > static_cast<std::size_t>(kMaxRanks))
      return Status(StatusCode::unsupported, fmt::format("the copy engines across processes: {} ranks in one "
                                                         "process, at most {}",
                                                         dst.size(), kMaxRanks));
    // Two calls ahead, this set still holds buffers the root may not have read.
    if (call > 2)
      if (Status s = wait_for([&] { return load(mine.consumed) + 2 >= call; }, failed, timeout,
                              "the root did not read the buffers of an earlier call");
          !s.ok())
        return s;
    for (std::size_t i = 0; i < dst.size(); ++i)
      if (Status s = exports_.share(dst[i], bytes, &mine.buffers[parity][i]); !s.ok()) return s;
    mine.ranks[parity] = static_cast<std::uint32_t>(dst.size());
    store(mine.published[parity], call);
    if (Status s = fork(streams); !s.ok()) return s;
    if (Status s = word(false, process_, &mine.ready, seq); !s.ok()) return s;
    if (Status s = word(true, process_, &mine.done, seq); !s.ok()) return s;
    return join(streams);
  }
  const int other = 1 - process_;
  Board& theirs = *board(other);
  if (Status s = fork(streams); !s.ok()) return s;
  for (void* d : dst)
    if (d != src)
      if (cudaError_t e = cudaMemcpyAsync(d, src, bytes, cudaMemcpyDeviceToDevice, side_); e != cudaSuccess)
        return cuda_failed("a copy into the root's own ranks", e);
  if (Status s = wait_for([&] { return load(theirs.published[parity]) == call; }, failed, timeout,
                          "the other process did not publish its receive buffers");
      !s.ok())
    return s;
  const std::uint32_t ranks = load(theirs.ranks[parity]);
  std::vector<void*> mapped(ranks, nullptr);
  for (std::uint32_t i = 0; i < ranks && i < static_cast<std::uint32_t>(kMaxRanks); ++i) {
    const SharedBuffer b = theirs.buffers[parity][i];
    if (b.allocation.size - b.offset < bytes)
      return Status(StatusCode::invalid_argument,
                    fmt::format("the copy engines across processes: process {}'s receive buffer holds {} bytes, the "
                                "broadcast moves {}",
                                other, b.allocation.size - b.offset, bytes));
    if (Status s = imports_.map(other, b, &mapped[i]); !s.ok()) return s;
  }
  store(theirs.consumed, call);
  if (Status s = word(true, other, &theirs.ready, seq); !s.ok()) return s;
  for (void* d : mapped)
    if (cudaError_t e = cudaMemcpyAsync(d, src, bytes, cudaMemcpyDeviceToDevice, side_); e != cudaSuccess)
      return cuda_failed("a copy into the other process's buffer", e);
  if (Status s = word(false, other, &theirs.done, seq); !s.ok()) return s;
  return join(streams);
}

void ProcessEngines::release() {
  const std::uint64_t calls = std::atomic_ref<std::uint64_t>(calls_).load(std::memory_order_relaxed);
  const std::uint32_t ahead = ring_release_value(static_cast<std::uint32_t>(calls + 2));
  for (int p = 0; p < 2; ++p) {
    store(board(p)->ready, ahead);
    store(board(p)->done, ahead);
  }
}

}  // namespace canopy
