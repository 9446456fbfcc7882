// ProcessCallPath::send_recv (process_call_path.hpp): a group of sends and receives of this process's ranks, on a
// communicator across the processes of one host. As in NCCL only the peers take part: a process issues its own ranks'
// ops whenever its thread gets there, and a process with none issues nothing. The group takes no call number (the
// collectives' counts stay as they were) and nothing waits on the host for another process. Then:
// - every op is checked here: its rank this process's, its peer a rank, its buffer, its stream (this GPU's, not
//   capturing): a wrong one refuses the group with invalid_argument before anything moves, and the communicator goes
//   on;
// - the ops between this process's ranks (self-sends included) are matched within the group (match_point_to_point)
//   and copied between their streams with events (PointToPointCopies), as in one process;
// - those with a rank of another process go to their pairs' rings (PairPointToPoint): each is posted beside its peer's
//   side, and where a send and its receive give different counts or types, the side posting second refuses its group
//   naming both and fails the communicator, since the peer has already queued its side: the other processes' calls
//   then fail with that message, and nothing waits for ever.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "runtime/env/runtime_env.hpp"
#include "runtime/processes/process_call_path.hpp"

namespace canopy {

Status ProcessCallPath::share_pairs(int ordinal) {
  PairLayout layout;
  layout.process = group_->process;
  layout.process_of_rank = layout_.placement.device_of_rank;  // a process is a device index
  layout.ordinal = ordinal;
  try {
    const PairRingShape shape = pair_ring_shape_from_environment();
    layout.slot_bytes = shape.slot_bytes;
    layout.slots = shape.slots;
  } catch (const Error& e) {
    return Status(StatusCode::invalid_argument, e.what());
  }
  return PairPointToPoint::share(*group_->channel, *peers_, std::move(layout), &pairs_);
}

Status ProcessCallPath::send_recv(std::span<const PointToPoint> ops) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kernels_.broken()) return kernels_.broken_status();
  if (failure_.failed()) return failure_.status();
  if (!pairs_)
    return Status(StatusCode::unsupported,
                  fmt::format("send_recv ({} ops) across processes needs the driver's stream memory operations "
                              "(cuStreamWaitValue32, cuStreamWriteValue32), which this driver lacks (every process "
                              "of this host refuses it alike)",
                              ops.size()));
  const std::span<const int> process_of_rank = layout_.placement.device_of_rank;  // a process is a device index
  const int self = group_->process, first = first_own_rank(), own = own_ranks();
  // Ranks, peers and buffers of every op, and the pairs within this process matched.
  std::vector<Transfer> local;
  if (Status s = match_point_to_point(ops, ranks(), &local,
                                      [&](int sender, int receiver) {
                                        return process_of_rank[sender] == self && process_of_rank[receiver] == self;
                                      });
      !s.ok())
    return s;
  std::vector<PointToPoint> across;
  for (std::size_t at = 0; at < ops.size(); ++at) {
    const PointToPoint& op = ops[at];
    if (op.rank < first || op.rank >= first + own)
      return Status(
          StatusCode::invalid_argument,
          fmt::format("send_recv: op {} ({} of rank {}) is issued by rank {}, which {} holds: each process "
                      "passes only its own ranks' ops, and this is {}",
                      at, kind_name(op.kind), op.rank, op.rank,
                      describe_process(group_->facts[process_of_rank[op.rank]], process_of_rank[op.rank], false),
                      describe_process(group_->facts[self], self, false)));
    if (process_of_rank[op.peer] != self) across.push_back(op);
  }
  if (Status s = check_point_to_point_streams(ops, layout_.placement.ordinal_of_rank, kernels_.oracle()); !s.ok())
    return s;
  // A side of a pair kPostingSlots messages ahead of its peer waits here for it, unless the communicator fails.
  const auto given_up = [this]() -> std::optional<Status> {
    if (failure_.failed()) return failure_.status();
    return std::nullopt;
  };
  if (Status s = pairs_->run(across, given_up); !s.ok()) {
    if (failure_.failed()) return failure_.status();
    // The peer of a refused message may have queued its side already: fail, so that no lane waits for ever.
    fail(s.message(), ProcessFailure::failed);
    return s;
  }
  if (Status s = local_copies_.run(local, layout_.placement.ordinal_of_rank); !s.ok()) return s;
  if (layout_.log.enabled(LogLevel::debug, LogSubsys::run))
    layout_.log.debug(LogSubsys::run,
                      fmt::format("send_recv: {} ops of this process: {} transfers between its ranks, {} sends and "
                                  "receives with ranks of other processes through the pairs' rings",
                                  ops.size(), local.size(), across.size()));
  return Status();
}

}  // namespace canopy
