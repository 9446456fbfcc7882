// check_peer_access: every tree edge of a plan between ranks on different GPUs needs peer access both ways (the
// sender writes the receiver's memory, the receiver raises the sender's counters). Pure, so the refusal a user
// sees on a machine without P2P between two GPUs is tested on any CPU.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "planner/plan.hpp"

namespace canopy {

// `device_of_rank`: device index per rank; `peer[a][b]`: device a can access device b's memory; `ordinals`: the
// CUDA ordinal of each device index (for the message); `device_of_relay`: the device index of each relay GPU (Blink+)
// the plan's paths may cross, whose hops (rank to relay, relay to relay, relay to rank) need peer access too. Throws
// canopy::Error naming the tree, the edge and the two GPUs, and what to do.
void check_peer_access(const Plan& plan, const std::vector<std::string>& ranks, const std::vector<int>& device_of_rank,
                       const std::vector<std::vector<bool>>& peer, const std::vector<int>& ordinals,
                       const std::map<std::string, int>& device_of_relay = {});

}  // namespace canopy
