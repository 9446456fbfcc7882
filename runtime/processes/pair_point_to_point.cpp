// PairPointToPoint (see pair_point_to_point.hpp): the rings and pages made at the join, each op posted in its pair's
// books, then its chunks queued on its lane between waits for the other side's word and writes of its own.
#include "runtime/processes/pair_point_to_point.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "core/error.hpp"
#include "core/shared_word.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/offload/ring_sequence.hpp"

namespace canopy {

namespace {

// Beside the call counters', the host rings', the copy engines' and their descriptors' (0x80000001 to 0x80000004).
constexpr std::uint32_t kPairPagesTag = 0x80000005u;
enum Direction { kSend = 0, kRecv = 1 };

std::string op_name(const PointToPoint& op, std::size_t at) {
  return fmt::format("{} of rank {} {} rank {} (op {})", kind_name(op.kind), op.rank,
                     op.kind == PointToPointKind::send ? "to" : "from", op.peer, at);
}

}  // namespace

// A pair's words, on cache lines of their own: each is written by one lane and waited for by the other process's.
struct PairPointToPoint::PairWords {
  std::uint32_t sent = 0;  // chunks rank a's sends to b have put into a's ring for b
  std::uint32_t sent_pad[15] = {};
  std::uint32_t taken = 0;  // chunks rank a's receives from b have copied out of b's ring for a
  std::uint32_t taken_pad[15] = {};
};

int PairLayout::processes() const {
  return process_of_rank.empty() ? 0 : *std::max_element(process_of_rank.begin(), process_of_rank.end()) + 1;
}
int PairLayout::first_rank(int process) const {
  return static_cast<int>(std::find(process_of_rank.begin(), process_of_rank.end(), process) - process_of_rank.begin());
}
int PairLayout::own_ranks(int process) const {
  return static_cast<int>(std::count(process_of_rank.begin(), process_of_rank.end(), process));
}
int PairLayout::ring_of(int a, int b) const {
  int index = 0;
  for (int r = 0; r < b; ++r) index += process_of_rank[r] != process_of_rank[a] ? 1 : 0;
  return index;
}

Status PairPointToPoint::share(FdChannel& channel, PeerMemory& peers, PairLayout layout,
                               std::unique_ptr<PairPointToPoint>* out) {
  if (!StreamWords::supported())
    return Status(StatusCode::unsupported,
                  "send and receive across processes need the driver's stream memory "
                  "operations (cuStreamWaitValue32, cuStreamWriteValue32), which this "
                  "driver lacks");
  if (layout.slots < 1 || layout.slot_bytes < 256)
    return Status(StatusCode::invalid_argument,
                  fmt::format("point-to-point across processes: {} slots of {} bytes per ring: give at least one slot "
                              "of 256 bytes or more",
                              layout.slots, layout.slot_bytes));
  std::unique_ptr<PairPointToPoint> p(new PairPointToPoint(std::move(layout)));
  const PairLayout& l = p->layout_;
  const int processes = l.processes(), ranks = l.ranks();
  for (int q = 0; q < processes; ++q) p->max_own_ = std::max(p->max_own_, l.own_ranks(q));
  const std::size_t pairs = static_cast<std::size_t>(p->max_own_) * static_cast<std::size_t>(ranks);
  const std::size_t page = (pairs * (sizeof(PairWords) + 2 * sizeof(PostingBook)) + 4095) / 4096 * 4096;
  if (Status s = p->pages_.share(channel, kPairPagesTag, "the point-to-point pages", l.process, processes, page, true);
      !s.ok())
    return s;
  std::vector<void*> pages;
  for (int q = 0; q < processes; ++q) pages.push_back(p->pages_.at(q));
  const int own = l.own_ranks(l.process);
  const int lanes = own * (ranks - own) * 2;
  if (Status s = p->words_.create("send and receive across processes", l.ordinal, pages, page, lanes); !s.ok())
    return s;
  p->chunks_ = std::make_unique<std::atomic<std::uint32_t>[]>(static_cast<std::size_t>(lanes));
  const std::size_t ring = l.slot_bytes * static_cast<std::size_t>(l.slots);
  try {
    p->rings_ = peers.allocate_zeroed(
        [&](int rank) { return ring * static_cast<std::size_t>(ranks - l.own_ranks(l.process_of_rank[rank])); });
  } catch (const Error& e) {
    return Status(StatusCode::cuda_error,
                  fmt::format("point-to-point across processes: the rings ({} slots of {} bytes per peer rank): {}",
                              l.slots, l.slot_bytes, e.what()));
  }
  *out = std::move(p);
  return Status();
}

PairPointToPoint::~PairPointToPoint() {
  if (released_) settle();
}

void PairPointToPoint::settle() {
  // A lane released may still write a word back below the release value after it: release again until all are idle.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!words_.idle() && std::chrono::steady_clock::now() < deadline) {
    release();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Status PairPointToPoint::drain(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!released_ && !words_.idle()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      release();
      settle();
      return Status(StatusCode::remote_error,
                    fmt::format("sends or receives across processes still waited for their peers {} s after the "
                                "communicator's end began (a send whose receive was never posted, or the other way): "
                                "released, their buffers undefined",
                                std::chrono::duration_cast<std::chrono::seconds>(timeout).count()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (released_) settle();
  return Status();
}

void PairPointToPoint::release_rings(PeerMemory& peers) {
  for (void* r : rings_) peers.free(r);
  rings_.clear();
}

std::size_t PairPointToPoint::pair_index(int a, int b) const {
  const int p = layout_.process_of_rank[a];
  return static_cast<std::size_t>(a - layout_.first_rank(p)) * static_cast<std::size_t>(layout_.ranks()) +
         static_cast<std::size_t>(b);
}

PairPointToPoint::PairWords& PairPointToPoint::words(int a, int b) const {
  auto* base = static_cast<PairWords*>(pages_.at(layout_.process_of_rank[a]));
  return base[pair_index(a, b)];
}

PostingBook& PairPointToPoint::send_book(int a, int b) const {
  char* page = static_cast<char*>(pages_.at(layout_.process_of_rank[a]));
  auto* books = reinterpret_cast<PostingBook*>(
      page + static_cast<std::size_t>(max_own_) * static_cast<std::size_t>(layout_.ranks()) * sizeof(PairWords));
  return books[2 * pair_index(a, b)];
}

PostingBook& PairPointToPoint::recv_book(int a, int b) const { return (&send_book(a, b))[1]; }

int PairPointToPoint::lane_of(int rank, int peer, bool send) const {
  const int own = layout_.own_ranks(layout_.process);
  const int local = rank - layout_.first_rank(layout_.process);
  return (local * (layout_.ranks() - own) + layout_.ring_of(rank, peer)) * 2 + (send ? kSend : kRecv);
}

int PairPointToPoint::lane_of(const PointToPoint& op) const {
  return lane_of(op.rank, op.peer, op.kind == PointToPointKind::send);
}

char* PairPointToPoint::slot(int sender, int receiver, int slot) const {
  const std::size_t ring = layout_.slot_bytes * static_cast<std::size_t>(layout_.slots);
  return static_cast<char*>(rings_[sender]) + ring * static_cast<std::size_t>(layout_.ring_of(sender, receiver)) +
         layout_.slot_bytes * static_cast<std::size_t>(slot);
}

Status PairPointToPoint::post(const PointToPoint& op, std::size_t at,
                              const std::function<std::optional<Status>()>& given_up) {
  const bool send = op.kind == PointToPointKind::send;
  PostingBook& mine = send ? send_book(op.rank, op.peer) : recv_book(op.rank, op.peer);
  const PostingBook& theirs = send ? recv_book(op.peer, op.rank) : send_book(op.peer, op.rank);
  while (!posting_room(mine, theirs)) {
    if (std::optional<Status> s = given_up ? given_up() : std::nullopt) return *s;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  const PostingCheck c = post_message(mine, theirs, PostedMessage{op.count, static_cast<std::uint32_t>(op.dtype)});
  if (!c.theirs || *c.theirs == PostedMessage{op.count, static_cast<std::uint32_t>(op.dtype)}) return Status();
  const auto elements = [](std::uint64_t count, std::uint32_t dtype) {
    return fmt::format("{} {}", count, to_string(static_cast<DataType>(dtype)));
  };
  return Status(StatusCode::invalid_argument,
                fmt::format("send_recv: {} is message {} between them and gives {}, but rank {}'s {} {} rank {} gives "
                            "{}: the k-th send from a rank to a peer meets the peer's k-th receive from it, and both "
                            "must pass the same count and type",
                            op_name(op, at), c.number, elements(op.count, static_cast<std::uint32_t>(op.dtype)),
                            op.peer, send ? "receive" : "send", send ? "from" : "to", op.rank,
                            elements(c.theirs->count, c.theirs->dtype)));
}

Status PairPointToPoint::queue(const PointToPoint& op, int lane) {
  const std::uint64_t bytes = op.count * static_cast<std::uint64_t>(size_of(op.dtype));
  const std::vector<RingChunk> chunks = ring_chunks(chunks_[lane].load(), bytes, layout_.slot_bytes, layout_.slots);
  const bool send = op.kind == PointToPointKind::send;
  const int me = layout_.process, peer = layout_.process_of_rank[op.peer];
  // A send waits until its peer has taken the chunk its slot held before, copies the user's chunk in and says so in
  // `sent`; a receive waits until its peer has put the chunk there, copies it out and says so in `taken`.
  const PairWords& theirs = words(op.peer, op.rank);
  PairWords& mine = words(op.rank, op.peer);
  const std::uint32_t* awaited = send ? &theirs.taken : &theirs.sent;
  std::uint32_t* written = send ? &mine.sent : &mine.taken;
  for (const RingChunk& c : chunks) {
    char* user = static_cast<char*>(op.buffer) + c.offset;
    char* ring = send ? slot(op.rank, op.peer, c.slot) : slot(op.peer, op.rank, c.slot);
    if (!send || c.wait_drained)
      if (Status s = words_.wait(peer, awaited, send ? c.drained : c.filled, lane); !s.ok()) return s;
    if (cudaError_t e = cudaMemcpyAsync(send ? ring : user, send ? user : ring, c.bytes, cudaMemcpyDeviceToDevice,
                                        words_.side(lane));
        e != cudaSuccess)
      return words_.failed(fmt::format("copying a chunk of rank {}'s {} rank {} ({} bytes) {}", op.rank,
                                       send ? "send to" : "receive from", op.peer, c.bytes,
                                       send ? "into its ring" : "out of the sender's ring"),
                           e);
    if (Status s = words_.write(me, written, c.filled, lane); !s.ok()) return s;
  }
  chunks_[lane].fetch_add(static_cast<std::uint32_t>(chunks.size()));
  return Status();
}

Status PairPointToPoint::run(std::span<const PointToPoint> ops,
                             const std::function<std::optional<Status>()>& given_up) {
  if (ops.empty()) return Status();
  for (std::size_t at = 0; at < ops.size(); ++at)
    if (Status s = post(ops[at], at, given_up); !s.ok()) return s;
  // Per caller's stream, the lanes its ops use: every lane forked before any is joined, so that the group's sends and
  // receives run side by side.
  std::map<cudaStream_t, std::vector<int>> lanes_of;
  for (const PointToPoint& op : ops)
    if (op.count > 0) {
      std::vector<int>& lanes = lanes_of[op.stream];
      if (const int lane = lane_of(op); std::find(lanes.begin(), lanes.end(), lane) == lanes.end())
        lanes.push_back(lane);
    }
  for (const auto& [stream, lanes] : lanes_of)
    if (Status s = words_.fork_lanes(stream, lanes); !s.ok()) return s;
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(layout_.ordinal); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  for (const PointToPoint& op : ops)
    if (op.count > 0)
      if (Status s = queue(op, lane_of(op)); !s.ok()) return s;
  for (const auto& [stream, lanes] : lanes_of)
    if (Status s = words_.join_lanes(lanes, stream); !s.ok()) return s;
  return Status();
}

void PairPointToPoint::release() {
  released_ = true;
  const int first = layout_.first_rank(layout_.process), own = layout_.own_ranks(layout_.process);
  for (int a = first; a < first + own; ++a)
    for (int b = 0; b < layout_.ranks(); ++b) {
      if (layout_.process_of_rank[b] == layout_.process) continue;
      // a -> b: a's `sent`, which b's receives wait for, and b's `taken`, which a's sends wait for; b -> a alike.
      const std::uint32_t out = ring_release_value(chunks_[lane_of(a, b, true)].load() + 2);
      const std::uint32_t in = ring_release_value(chunks_[lane_of(a, b, false)].load() + 2);
      store_release(words(a, b).sent, out);
      store_release(words(b, a).taken, out);
      store_release(words(a, b).taken, in);
      store_release(words(b, a).sent, in);
    }
}

}  // namespace canopy
