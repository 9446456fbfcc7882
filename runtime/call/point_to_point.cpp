// Point-to-point ops and their matching (point_to_point.hpp): every op's rank, peer and buffer checked first, in the
// group's order, then each (sender, receiver) pair's sends met with its receives in order; the first op at fault is
// named with the fix.
#include "runtime/call/point_to_point.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace canopy {

PointToPoint send_op(int rank, const void* buffer, std::uint64_t count, DataType dtype, int peer,
                     cudaStream_t stream) {
  // The buffer is only read (Transfer::from); it is kept non-const so that one struct holds both kinds.
  return PointToPoint{PointToPointKind::send, rank, peer, const_cast<void*>(buffer), count, dtype, stream};
}

PointToPoint recv_op(int rank, void* buffer, std::uint64_t count, DataType dtype, int peer, cudaStream_t stream) {
  return PointToPoint{PointToPointKind::recv, rank, peer, buffer, count, dtype, stream};
}

const char* kind_name(PointToPointKind kind) { return kind == PointToPointKind::send ? "send" : "recv"; }

namespace {

using Pair = std::pair<int, int>;  // (sender, receiver)

bool is_send(const PointToPoint& op) { return op.kind == PointToPointKind::send; }
Pair pair_of(const PointToPoint& op) { return is_send(op) ? Pair{op.rank, op.peer} : Pair{op.peer, op.rank}; }

// "send 2 of rank 1 to peer 3 (op 5)": `index` counts the op's kind within its pair, from 0.
std::string op_text(const PointToPoint& op, std::size_t index, std::size_t at) {
  return fmt::format("{} {} of rank {} {} peer {} (op {})", kind_name(op.kind), index, op.rank,
                     is_send(op) ? "to" : "from", op.peer, at);
}

std::string elements_text(std::uint64_t count, DataType dtype) { return fmt::format("{} {}", count, to_string(dtype)); }

Status invalid(std::string message) { return Status(StatusCode::invalid_argument, "send_recv: " + std::move(message)); }

// Rank and peer in range, a buffer wherever elements move.
Status check_op(const PointToPoint& op, std::size_t at, int ranks) {
  const std::string range = fmt::format("this communicator's ranks are 0..{}", ranks - 1);
  if (op.rank < 0 || op.rank >= ranks)
    return invalid(fmt::format("op {} ({}) is issued by rank {}, but {}: set PointToPoint::rank to the rank that "
                               "issues it",
                               at, kind_name(op.kind), op.rank, range));
  if (op.peer < 0 || op.peer >= ranks)
    return invalid(fmt::format("{} of rank {} (op {}) names peer {}, but {}: pass the peer's rank", kind_name(op.kind),
                               op.rank, at, op.peer, range));
  return Status();
}

Status check_buffer(const PointToPoint& op, std::size_t index, std::size_t at) {
  if (op.buffer || op.count == 0) return Status();
  return invalid(fmt::format("{} has a null buffer and count {}: pass a buffer of {} elements, or count 0",
                             op_text(op, index, at), op.count, elements_text(op.count, op.dtype)));
}

Status unmatched(const PointToPoint& op, std::size_t index, std::size_t at, std::size_t posted) {
  const bool send = is_send(op);
  return invalid(fmt::format(
      "{} has no matching {}: rank {} posts {} {} {} rank {} in this group; add a {} of rank {} {} peer {} of {}, or "
      "drop the {}",
      op_text(op, index, at), send ? "receive" : "send", op.peer, posted, send ? "receive(s)" : "send(s)",
      send ? "from" : "to", op.rank, send ? "recv_op" : "send_op", op.peer, send ? "from" : "to", op.rank,
      elements_text(op.count, op.dtype), kind_name(op.kind)));
}

}  // namespace

Status match_point_to_point(std::span<const PointToPoint> ops, int ranks, std::vector<Transfer>* out,
                            const std::function<bool(int sender, int receiver)>& matched_here) {
  out->clear();
  // Per pair, its sends' and receives' op indexes in the group's order; per op, its index among them.
  std::map<Pair, std::vector<std::size_t>> sends;
  std::map<Pair, std::vector<std::size_t>> recvs;
  std::vector<std::size_t> index_in_pair(ops.size());
  for (std::size_t at = 0; at < ops.size(); ++at) {
    const PointToPoint& op = ops[at];
    if (Status s = check_op(op, at, ranks); !s.ok()) return s;
    std::vector<std::size_t>& mine = (is_send(op) ? sends : recvs)[pair_of(op)];
    index_in_pair[at] = mine.size();
    mine.push_back(at);
    if (Status s = check_buffer(op, index_in_pair[at], at); !s.ok()) return s;
  }
  std::vector<Transfer> transfers;
  for (std::size_t at = 0; at < ops.size(); ++at) {
    const PointToPoint& op = ops[at];
    if (matched_here && !matched_here(pair_of(op).first, pair_of(op).second)) continue;
    const std::size_t k = index_in_pair[at];
    const std::vector<std::size_t>& others = (is_send(op) ? recvs : sends)[pair_of(op)];
    if (k >= others.size()) return unmatched(op, k, at, others.size());
    if (!is_send(op)) continue;  // a receive is met from its send
    const PointToPoint& recv = ops[others[k]];
    if (recv.count != op.count || recv.dtype != op.dtype)
      return invalid(fmt::format(
          "{} is {} but the receive it meets, {}, is {}: within a pair the k-th send meets the k-th receive; pass "
          "the same count and type on both sides",
          op_text(op, k, at), elements_text(op.count, op.dtype), op_text(recv, k, others[k]),
          elements_text(recv.count, recv.dtype)));
    transfers.push_back(Transfer{at, others[k], op.rank, op.peer, static_cast<int>(k), op.buffer, recv.buffer,
                                 op.count, op.dtype, op.stream, recv.stream});
  }
  *out = std::move(transfers);
  return Status();
}

Status check_point_to_point_streams(std::span<const PointToPoint> ops, std::span<const int> ordinal_of_rank,
                                    const CallOracle& oracle) {
  std::vector<std::pair<cudaStream_t, int>> asked;  // (stream, GPU) pairs found good: a few
  for (std::size_t at = 0; at < ops.size(); ++at) {
    const PointToPoint& op = ops[at];
    const int gpu = ordinal_of_rank[op.rank];
    if (std::find(asked.begin(), asked.end(), std::pair{op.stream, gpu}) != asked.end()) continue;
    asked.emplace_back(op.stream, gpu);
    const std::string who = fmt::format("op {} ({} of rank {})", at, kind_name(op.kind), op.rank);
    // First: asking a capturing stream for its device invalidates the capture.
    if (oracle.stream_capturing && oracle.stream_capturing(op.stream))
      return Status(StatusCode::unsupported,
                    fmt::format("send_recv: {}: its stream is capturing a CUDA graph; point-to-point inside a capture "
                                "is not served yet (a later part of issue 68): issue the group outside the capture",
                                who));
    if (is_default_stream(op.stream) || !oracle.stream) continue;
    const std::optional<StreamFacts> facts = oracle.stream(op.stream);
    if (!facts) return invalid(fmt::format("{}: its stream ({}) is not a valid CUDA stream", who, fmt::ptr(op.stream)));
    if (facts->device != gpu)
      return invalid(fmt::format("{}: its stream belongs to GPU {}, but rank {} runs on GPU {}: create it on GPU {}",
                                 who, facts->device, op.rank, gpu, gpu));
  }
  return Status();
}

}  // namespace canopy
