// What ncclGroupSimulateEnd says a group's collectives would take (ncclSimInfo_t::estimatedTime, microseconds):
// each communicator's calls once (the parts of several ranks held here are one collective), each predicted by the
// simulator (simulator/simulate.hpp) on its communicator's topology, the planned trees of its ranks moving its bytes,
// and summed in the order they would be issued. An estimate for choosing between groups, as NCCL's is, not a promise.
#pragma once

#include <utility>
#include <vector>

#include "nccl/base/rank_call.hpp"

struct ncclComm;

namespace canopy::nccl_api {

float estimate_us(const std::vector<std::pair<ncclComm*, RankCall>>& calls);

}  // namespace canopy::nccl_api
