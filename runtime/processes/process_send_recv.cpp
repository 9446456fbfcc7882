// ProcessCallPath::send_recv (process_call_path.hpp): a group of sends and receives across the processes of one host.
// Every process issues every group, with its own ranks' ops only (as each process's ranks call ncclSend/ncclRecv in
// one ncclGroupStart/End), under the calls' lock, failure checks and call number like every call (its signature, a
// send_recv, compared in the shared pages: a process making a collective meanwhile fails both). Then:
// - agreement: each process checks its part (its own ranks, its streams) and sends it, or its refusal, to every other
//   through the bootstrap (point_to_point_exchange.hpp); every process then holds the same whole group and matches
//   it alike, so a wrong op (unmatched, counts or types that differ, another process's rank) is refused by every
//   process with the same message, none waiting for another;
// - the staging regions grow where the group needs more (every process alike, after each has waited for its copies
//   and all met at a barrier);
// - the transfers between this process's ranks (self-sends included) are copied between their streams with events
//   (PointToPointCopies), those across processes go through the senders' staging regions on a side stream ordered by
//   words in shared host memory (ProcessPointToPoint). Nothing waits on the host but the exchange (one bootstrap
//   round, as CANOPY_CHECK_CALLS=1 makes for every collective) and a growth.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "runtime/processes/point_to_point_exchange.hpp"
#include "runtime/processes/process_call_path.hpp"

namespace canopy {

Status ProcessCallPath::send_recv(std::span<const PointToPoint> ops) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kernels_.broken()) return kernels_.broken_status();
  if (failure_.failed()) return failure_.status();
  if (!point_to_point_)
    return Status(StatusCode::unsupported,
                  fmt::format("send_recv ({} ops) across processes needs the driver's stream memory operations "
                              "(cuStreamWaitValue32, cuStreamWriteValue32), which this driver lacks (every process "
                              "of this host refuses it alike)",
                              ops.size()));
  const auto name = [this](int p) { return describe_process(group_->facts[p], p, false); };
  const std::span<const int> process_of_rank = layout_.placement.device_of_rank;  // a process is a device index
  const auto check_streams = [this](std::span<const PointToPoint> o) {
    return check_point_to_point_streams(o, layout_.placement.ordinal_of_rank, kernels_.oracle());
  };
  const std::string refusal =
      own_part_refusal(ops, first_own_rank(), own_ranks(), process_of_rank, name, check_streams);
  if (Status s = announce_call([this] { return point_to_point_signature(calls_); }); !s.ok()) return s;
  std::vector<std::string> parts;
  if (Status s = group_->bootstrap->allgather(encode_point_to_point(ops, refusal), &parts); !s.ok())
    return failure_.failed() ? failure_.status() : s;
  WholeGroup group;
  if (Status s = assemble_group(parts, group_->process, ops, name, &group); !s.ok()) return s;
  std::vector<Transfer> transfers;
  if (Status s = match_whole_group(group, ranks(), &transfers); !s.ok()) return s;
  const PointToPointPlan plan = plan_point_to_point(transfers, process_of_rank, group_->process);
  // From here every process moves the group: one that cannot fails the communicator, so that none waits for it.
  const auto failed_group = [this](const std::string& why) {
    fail("send_recv: " + why, ProcessFailure::failed);
    return failure_.status();
  };
  if (plan.staging_bytes > 0 && !point_to_point_->fits(plan.staging_bytes)) {
    // Every process's copies in and out of the regions are done before any frees its own.
    if (Status s = point_to_point_->synchronize(); !s.ok()) return failed_group(s.message());
    if (Status s = group_->bootstrap->barrier(); !s.ok()) return failure_.failed() ? failure_.status() : s;
    try {
      point_to_point_->grow(*peers_, plan.staging_bytes);
    } catch (const Error& e) {
      return failed_group(fmt::format("growing the staging regions to {} bytes: {}", plan.staging_bytes, e.what()));
    }
  }
  // Across processes first (every process numbers the groups alike), then between this process's ranks.
  if (Status s = point_to_point_->run(plan); !s.ok()) return failed_group(s.message());
  if (Status s = local_copies_.run(plan.local, layout_.placement.ordinal_of_rank); !s.ok()) return s;
  if (layout_.log.enabled(LogLevel::debug, LogSubsys::run))
    layout_.log.debug(LogSubsys::run,
                      fmt::format("send_recv: {} ops of this process, {} transfers in the group: {} between its ranks, "
                                  "{} sent and {} received across processes through the staging regions",
                                  ops.size(), transfers.size(), plan.local.size(), plan.sends.size(),
                                  plan.receives.size()));
  return Status();
}

}  // namespace canopy
