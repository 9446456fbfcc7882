// LocalCallPath::send_recv (local_call_path.hpp): a group of sends and receives of this process's ranks, under the
// calls' lock and failure checks like every call: matched (runtime/call/point_to_point.hpp), their streams checked,
// then copied between the ranks' streams (PointToPointCopies); no kernel is built or launched.
#include <fmt/format.h>

#include <vector>

#include "runtime/local/local_call_path.hpp"

namespace canopy {

Status LocalCallPath::send_recv(std::span<const PointToPoint> ops) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kernels_.broken()) return kernels_.broken_status();
  if (failure_.failed()) return failure_.status();
  std::vector<Transfer> transfers;
  if (Status s = match_point_to_point(ops, layout_.ranks(), &transfers); !s.ok()) return s;
  if (Status s = check_point_to_point_streams(ops, layout_.placement.ordinal_of_rank, kernels_.oracle()); !s.ok())
    return s;
  if (Status s = copies_.run(transfers, layout_.placement.ordinal_of_rank); !s.ok()) return s;
  if (layout_.log.enabled(LogLevel::debug, LogSubsys::run)) {
    std::uint64_t bytes = 0;
    for (const Transfer& t : transfers) bytes += t.bytes();
    layout_.log.debug(LogSubsys::run, fmt::format("send_recv: {} ops, {} transfers, {} bytes, copied between the "
                                                  "ranks' streams",
                                                  ops.size(), transfers.size(), bytes));
  }
  return Status();
}

}  // namespace canopy
