// EngineBoards (see engine_boards.hpp).
#include "runtime/offload/engine_boards.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "core/shared_word.hpp"

namespace canopy {

namespace {

constexpr std::uint32_t kEnginesFdTag = 0x80000004u;  // a receive buffer's descriptor (memory from cuMemCreate)
constexpr std::uint32_t kUnshared = ~0u;  // a board's `ranks`: the publisher could not share its buffers this call


// Spins until `reached()` (the other process's host has got there), giving up when `failed` says so or at the
// deadline.
Status wait_for(const std::function<bool()>& reached, const std::function<bool()>& failed,
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

}  // namespace

EngineBoards::EngineBoards(int process, bool fd_buffers, FdChannel* channel, std::array<EngineBoard*, 2> boards,
                           const BufferDriver& driver)
    : process_(process), fd_buffers_(fd_buffers), channel_(channel), boards_(boards), exports_(driver),
      imports_(driver) {}

std::uint64_t EngineBoards::calls() const {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(calls_)).load(std::memory_order_relaxed);
}

Status EngineBoards::agree(bool maps, std::span<void* const> dst, std::size_t bytes,
                          const std::function<bool()>& failed, std::chrono::milliseconds timeout, bool* shared,
                          std::string_view refuse) {
  *shared = false;
  const std::uint64_t call = next_call();
  if (!maps) {
    if (Status s = publish(call, dst, bytes, failed, timeout, refuse); !s.ok()) return s;
    *shared = unshared_why_.empty();
    return Status();
  }
  return map_other(call, bytes, failed, timeout, shared);
}

Status EngineBoards::agree_both(void* recv, std::size_t bytes, const std::function<bool()>& failed,
                               std::chrono::milliseconds timeout, bool* shared, std::string_view refuse) {
  *shared = false;
  const std::uint64_t call = next_call();
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

std::uint64_t EngineBoards::next_call() {
  return std::atomic_ref<std::uint64_t>(calls_).fetch_add(1, std::memory_order_relaxed) + 1;
}

Status EngineBoards::publish(std::uint64_t call, std::span<void* const> dst, std::size_t bytes,
                            const std::function<bool()>& failed, std::chrono::milliseconds timeout,
                            std::string_view refuse) {
  const int parity = static_cast<int>(call & 1);
  EngineBoard& mine = board(process_);
  if (dst.size() > static_cast<std::size_t>(EngineBoard::kMaxRanks))
    return Status(StatusCode::unsupported, fmt::format("the copy engines across processes: {} ranks in one "
                                                       "process, at most {}",
                                                       dst.size(), EngineBoard::kMaxRanks));
  // This set of buffers was last published for call published_[parity]: the other process must have read that
  // publication before this one overwrites it (calls alternate between the two sets, but a process publishes only
  // in the calls where it is written into, so the set's last use may lie any number of calls back).
  if (const std::uint64_t last = published_[parity]; last > 0)
    if (Status s = wait_for([&] { return load_acquire(mine.consumed) >= last; }, failed, timeout,
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
    if (fd.get() >= 0) fds.emplace_back(b.allocation.id, std::move(fd));
  }
  if (!unshared_why_.empty()) {
    // Not sent: the next share of those allocations makes new descriptors.
    for (const auto& [id, fd] : fds) exports_.forget(id);
    fds.clear();
  }
  mine.ranks[parity] = unshared_why_.empty() ? static_cast<std::uint32_t>(dst.size()) : kUnshared;
  store_release(mine.published[parity], call);
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

Status EngineBoards::map_other(std::uint64_t call, std::size_t bytes, const std::function<bool()>& failed,
                              std::chrono::milliseconds timeout, bool* shared) {
  *shared = false;
  const int parity = static_cast<int>(call & 1);
  const int other = 1 - process_;
  EngineBoard& theirs = board(other);
  if (Status s = wait_for([&] { return load_acquire(theirs.published[parity]) == call; }, failed, timeout,
                          "the other process did not publish its receive buffers");
      !s.ok())
    return s;
  const std::uint32_t published = load_acquire(theirs.ranks[parity]);
  // At most kMaxRanks: the other process refuses more before it publishes.
  const std::uint32_t ranks =
      published == kUnshared ? 0 : std::min(published, static_cast<std::uint32_t>(EngineBoard::kMaxRanks));
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
  store_release(theirs.consumed, call);
  *shared = published != kUnshared;
  return Status();
}

}  // namespace canopy
