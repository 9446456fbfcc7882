// stuck_report: what the blocks of a collective that has not finished wait for, from a snapshot of its
// counters. For every lane block on the given devices, each wait whose counter is still short of what the
// block needs in this launch becomes one line naming the GPU, rank, tree, block and the chunk it waits for:
//   GPU 1 rank gpu1, tree 2 (out, root gpu0), block 3: chunk 6 of 12 has not come (gpu1.flag[21] at (e, 5):
//   chunk i from gpu0 has arrived)
// Pure: the watchdog (runtime/watchdog/watchdog.hpp) reads the counters from the GPUs; tests fabricate them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/schedule.hpp"
#include "core/collective.hpp"

namespace canopy {

// `flags[r][k]` is counter k of rank r (kFlagStride apart on the GPU, packed here). `epoch` is the launch's.
// `devices`: schedule device indices to report on (empty: all). At most `max_lines` lines, then "... N more".
std::vector<std::string> stuck_report(const Schedule& schedule, std::uint64_t count, std::uint64_t epoch,
                                      const std::vector<std::vector<std::uint64_t>>& flags,
                                      const std::vector<int>& devices = {}, int max_lines = 24);

// The same for a direct-protocol launch (templates/direct.cuh): `flags[r]` is rank r's direct flag area (entered
// and done words per peer and block), `device_of_rank` the device index per rank, `names` the ranks' names. Each
// block on `devices` still short of a peer's word for this launch becomes one line, e.g.
//   GPU 0 rank gpu0, direct allreduce, block 3: the peer has not entered this launch (gpu1 entered: gpu0.flag[35] =
//   launch 5)
// `two_shot`: the two-shot kernel's launch, in which every pair of ranks waits for each other.
std::vector<std::string> direct_stuck_report(Collective collective, int root, bool two_shot,
                                             const std::vector<std::string>& names,
                                             const std::vector<int>& device_of_rank, int blocks_per_rank,
                                             std::uint64_t epoch, const std::vector<std::vector<std::uint64_t>>& flags,
                                             const std::vector<int>& devices = {}, int max_lines = 24);

}  // namespace canopy
