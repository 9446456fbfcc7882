// ProcessEngines (see process_engines.hpp).
#include "runtime/offload/process_engines.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/offload/copy_engine_pair.hpp"
#include "runtime/offload/ring_sequence.hpp"

namespace canopy {

namespace {

constexpr std::uint32_t kEnginesTag = 0x80000003u;  // beside the call counters' and the host rings'
constexpr std::uint32_t kEnginesFdTag = 0x80000004u;  // a receive buffer's descriptor (memory from cuMemCreate)
constexpr std::uint32_t kUnshared = ~0u;  // a board's `ranks`: the receiver could not share its buffers this call
// The side streams: the first pushes (a broadcast's, a reduce's and an allreduce's inputs; the only one of a broadcast
// or a reduce), an allreduce's combining kernels, and its pushes of sums back.
enum SideStream { kPush = 0, kCombine = 1, kBack = 2, kLanes = 3 };

template <typename T>
T load(const T& x) {
  return std::atomic_ref<T>(const_cast<T&>(x)).load(std::memory_order_acquire);
}
template <typename T>
void store(T& x, T v) {
  std::atomic_ref<T>(x).store(v, std::memory_order_release);
}

}  // namespace

// A process's board. Calls alternate between two sets of buffers, so a publisher one call ahead does not overwrite
// what the mapping process has not read yet; before reusing a set it waits until `consumed` reaches that set's last
// publication.
struct ProcessEngines::Board {
  std::uint32_t ready = 0;   // GPU: the owner's side stream reached this engine call
  std::uint32_t done = 0;    // GPU: a broadcast root's copies into the owner's buffers for this call are done
  std::uint32_t landed = 0;  // GPU: reduce or allreduce input chunks pushed into the owner's receive buffer (chunks_)
  std::uint32_t returned = 0;  // GPU: an allreduce's chunks whose sums the other process pushed back (chunks_)
  std::uint32_t words_pad[28] = {};
  std::uint64_t published[2] = {};  // host, by call parity: the call whose buffers are in that set
  std::uint64_t consumed = 0;       // host: the last call whose publication the other process has read
  std::uint32_t ranks[2] = {};
  SharedBuffer buffers[2][kMaxRanks];
};

namespace {
constexpr std::size_t kBoardBytes = 8192;  // a board, in whole pages
}  // namespace

ProcessEngines::Board* ProcessEngines::board(int process) const {
  return static_cast<Board*>(memory_.at(process));
}

Status ProcessEngines::share(FdChannel& channel, int process, int ordinal, bool fd_buffers,
                             std::unique_ptr<ProcessEngines>* out) {
  static_assert(sizeof(Board) <= kBoardBytes);
  if (!StreamWords::supported())
    return Status(StatusCode::unsupported, "the copy engines across processes need the driver's stream memory "
                                           "operations (cuStreamWaitValue32, cuStreamWriteValue32), which this "
                                           "driver lacks: set CANOPY_ENGINE_BYTES=0 across processes");
  std::unique_ptr<ProcessEngines> e(new ProcessEngines());
  e->process_ = process;
  e->channel_ = &channel;
  e->fd_buffers_ = fd_buffers;
  if (Status s = e->memory_.share(channel, kEnginesTag, "the copy engines' board", process, 2, kBoardBytes, true);
      !s.ok())
    return s;
  void* const boards[] = {e->memory_.at(0), e->memory_.at(1)};
  if (Status s = e->words_.create("the copy engines across processes", ordinal, boards, kBoardBytes, kLanes); !s.ok())
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

Status ProcessEngines::agree(bool maps, std::span<void* const> dst, std::size_t bytes,
                             const std::function<bool()>& failed, std::chrono::milliseconds timeout, bool* shared,
                             std::string_view refuse) {
  *shared = false;
  const std::uint64_t call = next_call();
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  if (!maps) {
    if (Status s = publish(call, dst, bytes, failed, timeout, refuse); !s.ok()) return s;
    *shared = unshared_why_.empty();
    return Status();
  }
  return map_other(call, bytes, failed, timeout, shared);
}

Status ProcessEngines::agree_both(void* recv, std::size_t bytes, const std::function<bool()>& failed,
                                  std::chrono::milliseconds timeout, bool* shared, std::string_view refuse) {
  *shared = false;
  const std::uint64_t call = next_call();
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  // Process 0 publishes first and process 1 maps first: a descriptor's send waits for its receiver, so each process's
  // sends meet the other's receiving.
  void* const dst[] = {recv};
  bool theirs = false;
  for (int step = 0; step < 2; ++step) {
    const Status s = (step == process_) ? publish(call, dst, bytes, failed, timeout, refuse)
                                        : map_other(call, bytes, failed, timeout, &theirs);
    if (!s.ok()) return s;
  }
  *shared = theirs && unshared_why_.empty();
  return Status();
}

std::uint64_t ProcessEngines::next_call() {
  return std::atomic_ref<std::uint64_t>(calls_).fetch_add(1, std::memory_order_relaxed) + 1;
}

Status ProcessEngines::publish(std::uint64_t call, std::span<void* const> dst, std::size_t bytes,
                               const std::function<bool()>& failed, std::chrono::milliseconds timeout,
                               std::string_view refuse) {
  const int parity = static_cast<int>(call & 1);
  Board& mine = *board(process_);
  if (dst.size() > static_cast<std::size_t>(kMaxRanks))
    return Status(StatusCode::unsupported, fmt::format("the copy engines across processes: {} ranks in one "
                                                       "process, at most {}",
                                                       dst.size(), kMaxRanks));
  // This set of buffers was last published for call published_[parity]: the other process must have read that
  // publication before this one overwrites it (calls alternate between the two sets, but a process publishes only
  // in the calls where it is written into, so the set's last use may lie any number of calls back).
  if (const std::uint64_t last = published_[parity]; last > 0)
    if (Status s = wait_for([&] { return load(mine.consumed) >= last; }, failed, timeout,
                            "the other process did not read the buffers of an earlier call");
        !s.ok())
      return s;
  // Memory from cuMemCreate crosses as a descriptor, sent after the publication (the other process receives it once
  // it has read the publication; a send waits for its receiver).
  unshared_why_ = refuse;
  std::vector<std::pair<std::uint64_t, UniqueFd>> fds;  // allocation ID, its descriptor (closed on return)
  for (std::size_t i = 0; i < dst.size() && unshared_why_.empty(); ++i) {
    UniqueFd fd;
    SharedBuffer& b = mine.buffers[parity][i];
    b = SharedBuffer{};
    if (Status s = exports_.share(dst[i], bytes, &b, fd_buffers_ ? &fd : nullptr); !s.ok())
      unshared_why_ = "this process's buffers cannot be shared: " + s.message() +
                      (!fd_buffers_ && b.allocation.by_fd ? "; CANOPY_ENGINE_FD_BUFFERS=1 (the default) sends it" : "");
    if (fd.get() >= 0) fds.emplace_back(mine.buffers[parity][i].allocation.id, std::move(fd));
  }
  if (!unshared_why_.empty()) {
    // Not sent: the next share of those allocations makes new descriptors.
    for (const auto& [id, fd] : fds) exports_.forget(id);
    fds.clear();
  }
  mine.ranks[parity] = unshared_why_.empty() ? static_cast<std::uint32_t>(dst.size()) : kUnshared;
  store(mine.published[parity], call);
  published_[parity] = call;
  for (const auto& [id, fd] : fds) {
    const int raw = fd.get();
    if (Status s = channel_->send(1 - process_, kEnginesFdTag, std::span<const int>(&raw, 1), ""); !s.ok())
      return Status(s.code(), fmt::format("the copy engines across processes: sending a receive buffer's "
                                          "descriptor: {}",
                                          s.message()));
  }
  return Status();
}

Status ProcessEngines::map_other(std::uint64_t call, std::size_t bytes, const std::function<bool()>& failed,
                                 std::chrono::milliseconds timeout, bool* shared) {
  *shared = false;
  const int parity = static_cast<int>(call & 1);
  const int other = 1 - process_;
  Board& theirs = *board(other);
  if (Status s = wait_for([&] { return load(theirs.published[parity]) == call; }, failed, timeout,
                          "the other process did not publish its receive buffers");
      !s.ok())
    return s;
  const std::uint32_t published = load(theirs.ranks[parity]);
  // At most kMaxRanks: the other process refuses more before it publishes.
  const std::uint32_t ranks = published == kUnshared ? 0 : std::min(published, static_cast<std::uint32_t>(kMaxRanks));
  mapped_.assign(ranks, nullptr);
  for (std::uint32_t i = 0; i < ranks; ++i) {
    const SharedBuffer b = theirs.buffers[parity][i];
    if (b.allocation.size - b.offset < bytes)
      return Status(StatusCode::invalid_argument,
                    fmt::format("the copy engines across processes: process {}'s buffer holds {} bytes, the call "
                                "moves {}",
                                other, b.allocation.size - b.offset, bytes));
    const auto receive_fd = [&](UniqueFd* fd) {
      FdMessage m;
      if (Status s = channel_->receive(other, kEnginesFdTag, &m); !s.ok()) return s;
      if (m.fds.size() != 1)
        return Status(StatusCode::remote_error, fmt::format("the copy engines across processes: process {} sent {} "
                                                            "descriptors for a receive buffer, not 1",
                                                            other, m.fds.size()));
      *fd = std::move(m.fds[0]);
      return Status();
    };
    if (Status s = imports_.map(other, b, &mapped_[i], receive_fd); !s.ok()) return s;
  }
  store(theirs.consumed, call);
  *shared = published != kUnshared;
  return Status();
}

Status ProcessEngines::broadcast(bool root, const void* src, std::span<void* const> dst, std::size_t bytes,
                                 std::span<const cudaStream_t> streams) {
  const auto seq = static_cast<std::uint32_t>(std::atomic_ref<std::uint64_t>(calls_).load(std::memory_order_relaxed));
  if (streams.empty()) return Status(StatusCode::invalid_argument, "the copy engines across processes: no stream");
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  if (!root) {
    Board& mine = *board(process_);
    if (Status s = words_.fork(streams, 1); !s.ok()) return s;
    if (Status s = words_.write(process_, &mine.ready, seq); !s.ok()) return s;
    if (Status s = words_.wait(process_, &mine.done, seq); !s.ok()) return s;
    return words_.join(streams, 1);
  }
  const int other = 1 - process_;
  Board& theirs = *board(other);
  if (Status s = words_.fork(streams, 1); !s.ok()) return s;
  // The root's own ranks' copies run on their callers' streams (after the fork, so the side stream does not wait for
  // them), beside the push: on the side stream before it they cost a local copy's time on top of the push's (at
  // 1 GiB ~530 us of ~2970; 2026-11-27, nvidia-h200-x2).
  for (std::size_t i = 0; i < dst.size(); ++i)
    if (dst[i] != src)
      if (cudaError_t e = cudaMemcpyAsync(dst[i], src, bytes, cudaMemcpyDeviceToDevice,
                                          streams[std::min(i, streams.size() - 1)]);
          e != cudaSuccess)
        return words_.failed("a copy into the root's own ranks", e);
  if (Status s = words_.wait(other, &theirs.ready, seq); !s.ok()) return s;
  for (void* d : mapped_)
    if (cudaError_t e = cudaMemcpyAsync(d, src, bytes, cudaMemcpyDeviceToDevice, words_.side()); e != cudaSuccess)
      return words_.failed("a copy into the other process's buffer", e);
  if (Status s = words_.write(other, &theirs.done, seq); !s.ok()) return s;
  return words_.join(streams, 1);
}

Status ProcessEngines::reduce(bool root, int root_rank, const void* send, void* recv, std::size_t bytes,
                              DataType dtype, ReduceOp op, const CombineKernels* combine,
                              std::span<const cudaStream_t> streams) {
  const auto seq = static_cast<std::uint32_t>(std::atomic_ref<std::uint64_t>(calls_).load(std::memory_order_relaxed));
  if (streams.empty()) return Status(StatusCode::invalid_argument, "the copy engines across processes: no stream");
  if (root ? !combine || !recv : mapped_.size() != 1)
    return Status(StatusCode::internal, "the copy engines across processes: a reduce needs the root's receive buffer "
                                        "(one rank in each process) and its combining kernels");
  const auto element = static_cast<std::size_t>(size_of(dtype));
  const std::vector<std::size_t> chunks = CopyEnginePair::chunks(Collective::reduce, bytes, 0);
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  if (Status s = words_.fork(streams, 1); !s.ok()) return s;
  std::size_t off = 0;
  if (root) {
    Board& mine = *board(process_);
    if (Status s = words_.write(process_, &mine.ready, seq); !s.ok()) return s;
    for (std::size_t n : chunks) {
      const std::uint32_t landed = next_chunk();
      if (Status s = words_.wait(process_, &mine.landed, landed); !s.ok()) return s;
      char* at = static_cast<char*>(recv) + off;
      const void* mine_in = static_cast<const char*>(send) + off;
      const void* in_rank_order[2] = {root_rank == 0 ? mine_in : at, root_rank == 0 ? at : mine_in};
      if (Status s = combine->run(at, in_rank_order, n / element, dtype, op, words_.side()); !s.ok()) return s;
      off += n;
    }
    return words_.join(streams, 1);
  }
  const int other = 1 - process_;
  Board& theirs = *board(other);
  if (Status s = words_.wait(other, &theirs.ready, seq); !s.ok()) return s;
  for (std::size_t n : chunks) {
    const std::uint32_t landed = next_chunk();
    if (cudaError_t e = cudaMemcpyAsync(static_cast<char*>(mapped_[0]) + off, static_cast<const char*>(send) + off,
                                        n, cudaMemcpyDeviceToDevice, words_.side());
        e != cudaSuccess)
      return words_.failed("a reduce's chunk into the root's receive buffer", e);
    if (Status s = words_.write(other, &theirs.landed, landed); !s.ok()) return s;
    off += n;
  }
  return words_.join(streams, 1);
}

Status ProcessEngines::allreduce(int rank, const void* send, void* recv, std::size_t bytes, DataType dtype,
                                 ReduceOp op, const CombineKernels* combine, std::span<const cudaStream_t> streams) {
  const auto seq = static_cast<std::uint32_t>(std::atomic_ref<std::uint64_t>(calls_).load(std::memory_order_relaxed));
  if (streams.empty()) return Status(StatusCode::invalid_argument, "the copy engines across processes: no stream");
  if (!combine || !send || !recv || mapped_.size() != 1 || (rank != 0 && rank != 1))
    return Status(StatusCode::internal, "the copy engines across processes: an allreduce needs one rank in each "
                                        "process, both receive buffers and this process's combining kernels");
  const auto element = static_cast<std::size_t>(size_of(dtype));
  const std::vector<std::size_t> chunks = CopyEnginePair::chunks(Collective::allreduce, bytes, 0);
  if (chunks.empty()) return Status();
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  const int other = 1 - process_;
  const int o = 1 - rank;
  Board& mine = *board(process_);
  Board& theirs = *board(other);
  char* their_recv = static_cast<char*>(mapped_[0]);
  if (Status s = words_.fork(streams, kLanes); !s.ok()) return s;
  // This process's receive buffer may be written once its callers' streams got here; the other's, once it says so.
  if (Status s = words_.write(process_, &mine.ready, seq, kPush); !s.ok()) return s;
  if (Status s = words_.wait(other, &theirs.ready, seq, kPush); !s.ok()) return s;
  // Rank 0 reduces each chunk's first half, rank 1 the rest (16-byte aligned: whole elements). First every chunk's
  // other half of this input into the other's receive buffer, each chunk's arrival a word on the other's board.
  struct Part {
    std::size_t at[2], len[2];
    std::uint32_t landed;
  };
  std::vector<Part> parts;
  std::size_t off = 0;
  for (std::size_t n : chunks) {
    const std::size_t half = n / 2 / 16 * 16;
    parts.push_back({{off, off + half}, {half, n - half}, next_chunk()});
    off += n;
  }
  for (const Part& p : parts) {
    if (cudaError_t e = cudaMemcpyAsync(their_recv + p.at[o], static_cast<const char*>(send) + p.at[o], p.len[o],
                                        cudaMemcpyDeviceToDevice, words_.side(kPush));
        e != cudaSuccess)
      return words_.failed("an allreduce's chunk into the other process's receive buffer", e);
    if (Status s = words_.write(other, &theirs.landed, p.landed, kPush); !s.ok()) return s;
  }
  // As each chunk of the other's input lands: this rank's half combined in rank order, then its sum pushed back.
  for (const Part& p : parts) {
    char* sum = static_cast<char*>(recv) + p.at[rank];
    const void* in = static_cast<const char*>(send) + p.at[rank];
    const void* in_rank_order[2] = {rank == 0 ? in : sum, rank == 0 ? sum : in};
    if (Status s = words_.wait(process_, &mine.landed, p.landed, kCombine); !s.ok()) return s;
    if (Status s = combine->run(sum, in_rank_order, p.len[rank] / element, dtype, op, words_.side(kCombine)); !s.ok())
      return s;
    if (Status s = words_.follow(kBack, kCombine); !s.ok()) return s;
    if (cudaError_t e = cudaMemcpyAsync(their_recv + p.at[rank], sum, p.len[rank], cudaMemcpyDeviceToDevice,
                                        words_.side(kBack));
        e != cudaSuccess)
      return words_.failed("an allreduce's sum into the other process's receive buffer", e);
    if (Status s = words_.write(other, &theirs.returned, p.landed, kBack); !s.ok()) return s;
  }
  // The other's sums of its halves, in this receive buffer, before the callers' streams go on.
  if (Status s = words_.wait(process_, &mine.returned, parts.back().landed, kBack); !s.ok()) return s;
  return words_.join(streams, kLanes);
}

std::uint32_t ProcessEngines::next_chunk() {
  return static_cast<std::uint32_t>(std::atomic_ref<std::uint64_t>(chunks_).fetch_add(1, std::memory_order_relaxed) + 1);
}

void ProcessEngines::release() {
  const std::uint64_t calls = std::atomic_ref<std::uint64_t>(calls_).load(std::memory_order_relaxed);
  const std::uint32_t ahead = ring_release_value(static_cast<std::uint32_t>(calls + 2));
  const std::uint64_t chunks = std::atomic_ref<std::uint64_t>(chunks_).load(std::memory_order_relaxed);
  const std::uint32_t chunks_ahead = ring_release_value(static_cast<std::uint32_t>(chunks + 2));
  for (int p = 0; p < 2; ++p) {
    store(board(p)->ready, ahead);
    store(board(p)->done, ahead);
    store(board(p)->landed, chunks_ahead);
    store(board(p)->returned, chunks_ahead);
  }
}

}  // namespace canopy
