// launch_grid (see launch_grid.hpp): lowering's lane pass, the fused lanes left out, placed on devices.
#include "codegen/launch_grid.hpp"

#include "codegen/lower.hpp"
#include "codegen/lower_program.hpp"
#include "codegen/tree_lanes.hpp"

namespace canopy {

Schedule launch_grid(const Plan& plan, const CodegenOptions& options) {
  std::vector<TreeShape> shapes;
  Schedule s = lay_out_lanes(plan, options, &shapes);
  std::vector<bool> fused(s.lanes.size(), false);
  for (const auto& [reducing, copying] : fused_root_lanes(s)) fused[copying] = true;
  std::vector<Lane> kept;
  for (Lane& lane : s.lanes)
    if (!fused[lane.id]) {
      lane.id = static_cast<int>(kept.size());
      kept.push_back(std::move(lane));
    }
  s.lanes = std::move(kept);
  place_lanes_on_devices(s);
  return s;
}

Schedule launch_grid(const algo::Program& program, const CodegenOptions& options) {
  const int n = program.ranks();
  check_program_shape(program, options);
  Schedule s;
  s.options = options;
  s.options.pull = PullEdges::none;
  s.ranks = n;
  if (s.options.device_of_rank.empty()) s.options.device_of_rank = block_placement(n, n);
  const std::vector<int> lanes_of_ranks = program_lanes_of_ranks(program);
  const int blocks = program_lane_blocks(lanes_of_ranks, s.options.blocks_per_rank);
  for (int r = 0; r < n; ++r)
    for (int l = 0; l < lanes_of_ranks[r]; ++l) {
      Lane lane;
      lane.id = static_cast<int>(s.lanes.size());
      lane.tree = -1;
      lane.blocks = blocks;
      lane.rank = r;
      s.lanes.push_back(lane);
    }
  place_lanes_on_devices(s);
  return s;
}

}  // namespace canopy
