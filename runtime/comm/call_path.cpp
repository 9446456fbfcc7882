// CallPath (call_path.hpp): what every way of running checks alike, and the answer of one that serves no
// point-to-point.
#include "runtime/comm/call_path.hpp"

#include <fmt/format.h>

#include "planner/hosts.hpp"

namespace canopy {

Status CallPath::check_own_rank(const char* what, int rank, int first, int own) {
  if (rank >= first && rank < first + own) return Status();
  return Status(StatusCode::invalid_argument, fmt::format("{}: rank {} is not one of this process's ranks ({}..{})",
                                                          what, rank, first, first + own - 1));
}

Status CallPath::send_recv(std::span<const PointToPoint> ops) {
  const CommunicatorLayout& l = layout();
  const bool hosts = find_hosts(l.topology, l.placement.rank_names).size() > 1;
  return Status(StatusCode::unsupported,
                fmt::format("send_recv ({} ops): point-to-point on {} is not served yet; it is a later part of issue "
                            "68. A communicator of one process driving its GPUs (Communicator::create) or of the "
                            "processes of one host (Communicator::join) serves it; through the NCCL library ncclSend "
                            "and ncclRecv go to the real NCCL here",
                            ops.size(), hosts ? "a communicator of several hosts" : "this way of running"));
}

}  // namespace canopy
