// CANOPY_NCCL_FORWARD=allreduce,broadcast,...,sendrecv,alltoall,gather,scatter: calls that Canopy's communicators
// pass to the real NCCL communicator beside them instead of serving (A/B comparisons), and CANOPY_NCCL_REAL=auto|0|1: whether a real NCCL
// communicator is made beside Canopy's (nccl/real/real_comm.hpp). Pure parsers, tested on any CPU.
#pragma once

#include <set>
#include <string>

#include "core/collective.hpp"
#include "core/status.hpp"

namespace canopy::nccl_api {

// The calls NCCL makes of sends and receives, as CANOPY_NCCL_FORWARD names them: sendrecv (ncclSend and ncclRecv),
// alltoall, gather, scatter.
enum class PointToPointCall { sendrecv, alltoall, gather, scatter };
const char* to_string(PointToPointCall call);

// What CANOPY_NCCL_FORWARD names: collectives and point-to-point calls.
struct ForwardSet {
  std::set<Collective> collectives;
  std::set<PointToPointCall> point_to_point;

  bool names(Collective c) const { return collectives.count(c) > 0; }
  bool names(PointToPointCall c) const { return point_to_point.count(c) > 0; }
  bool empty() const { return collectives.empty() && point_to_point.empty(); }
  bool operator==(const ForwardSet&) const = default;
};

// Parses a comma-separated list of allreduce, broadcast, reduce, allgather, reducescatter, sendrecv, alltoall,
// gather, scatter (bcast = broadcast; reduce_scatter, reduce-scatter too; send_recv, alltoall too as all_to_all; all =
// every one; case does not matter, blanks are ignored). An unknown name is an invalid_argument Status naming it and the
// known ones.
Status parse_forward_list(const std::string& text, ForwardSet* out);
// CANOPY_NCCL_FORWARD's set (empty when unset).
Status forward_list_from_environment(ForwardSet* out);

enum class RealMode {
  automatic,  // auto (default): a real NCCL communicator where something will use it and every rank can have one
  off,        // 0: never; calls Canopy does not serve are refused
  required,   // 1: init fails (every rank alike, saying why) where one cannot be made
};
Status parse_real_mode(const std::string& text, RealMode* out);  // auto, 0/off/no/false, 1/on/yes/true
Status real_mode_from_environment(RealMode* out);                // CANOPY_NCCL_REAL (auto when unset)
const char* to_string(RealMode mode);                             // "auto", "0", "1"

}  // namespace canopy::nccl_api
