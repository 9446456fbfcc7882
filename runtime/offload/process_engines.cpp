// ProcessEngines (see process_engines.hpp).
#include "runtime/offload/process_engines.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/offload/ring_sequence.hpp"

namespace canopy {

namespace {

constexpr std::uint32_t kEnginesTag = 0x80000003u;  // beside the call counters' and the host rings'

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
  if (!StreamWords::supported())
    return Status(StatusCode::unsupported, "the copy engines across processes need the driver's stream memory "
                                           "operations (cuStreamWaitValue32, cuStreamWriteValue32), which this "
                                           "driver lacks: leave CANOPY_ENGINE_BYTES unset across processes");
  std::unique_ptr<ProcessEngines> e(new ProcessEngines());
  e->process_ = process;
  if (Status s = e->memory_.share(channel, kEnginesTag, "the copy engines' board", process, 2, kBoardBytes, true);
      !s.ok())
    return s;
  void* const boards[] = {e->memory_.at(0), e->memory_.at(1)};
  if (Status s = e->words_.create("the copy engines across processes", ordinal, boards, kBoardBytes); !s.ok())
    return s;
  *out = std::move(e);
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
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
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
    if (Status s = words_.fork(streams); !s.ok()) return s;
    if (Status s = words_.write(process_, &mine.ready, seq); !s.ok()) return s;
    if (Status s = words_.wait(process_, &mine.done, seq); !s.ok()) return s;
    return words_.join(streams);
  }
  const int other = 1 - process_;
  Board& theirs = *board(other);
  if (Status s = words_.fork(streams); !s.ok()) return s;
  for (void* d : dst)
    if (d != src)
      if (cudaError_t e = cudaMemcpyAsync(d, src, bytes, cudaMemcpyDeviceToDevice, words_.side()); e != cudaSuccess)
        return words_.failed("a copy into the root's own ranks", e);
  if (Status s = wait_for([&] { return load(theirs.published[parity]) == call; }, failed, timeout,
                          "the other process did not publish its receive buffers");
      !s.ok())
    return s;
  // At most kMaxRanks: the other process refuses more before it publishes.
  const std::uint32_t ranks = std::min(load(theirs.ranks[parity]), static_cast<std::uint32_t>(kMaxRanks));
  std::vector<void*> mapped(ranks, nullptr);
  for (std::uint32_t i = 0; i < ranks; ++i) {
    const SharedBuffer b = theirs.buffers[parity][i];
    if (b.allocation.size - b.offset < bytes)
      return Status(StatusCode::invalid_argument,
                    fmt::format("the copy engines across processes: process {}'s receive buffer holds {} bytes, the "
                                "broadcast moves {}",
                                other, b.allocation.size - b.offset, bytes));
    if (Status s = imports_.map(other, b, &mapped[i]); !s.ok()) return s;
  }
  store(theirs.consumed, call);
  if (Status s = words_.wait(other, &theirs.ready, seq); !s.ok()) return s;
  for (void* d : mapped)
    if (cudaError_t e = cudaMemcpyAsync(d, src, bytes, cudaMemcpyDeviceToDevice, words_.side()); e != cudaSuccess)
      return words_.failed("a copy into the other process's buffer", e);
  if (Status s = words_.write(other, &theirs.done, seq); !s.ok()) return s;
  return words_.join(streams);
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
