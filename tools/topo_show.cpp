// `canopy topo show NAME|FILE [--gpus ..]`: a readable table of nodes, bandwidth totals and links.
#include <fmt/format.h>

#include <memory>

#include "topology/topo_writer.hpp"
#include "topology/topology_table.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_topo_show(CLI::App& topo) {
  struct Args {
    TopologyArgs topology;
    bool as_topo = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = topo.add_subcommand("show", "print a topology's nodes, per-GPU bandwidth totals and links");
  add_topology_args(*cmd, args->topology, /*positional=*/true);
  cmd->add_flag("--topo", args->as_topo, "print canonical .topo text instead of the table (e.g. to save a subset)");
  cmd->footer(
      "Examples:\n"
      "  canopy topo show dgx1-v100\n"
      "  canopy topo show dgx1-v100 --gpus gpu0,gpu1,gpu5      a 3-GPU tenant\n"
      "  canopy topo show dgx2 --gpus 0,1,2,3 --topo > my.topo");
  cmd->callback([args] {
    const Topology t = resolve_topology(args->topology);
    fmt::print("{}", args->as_topo ? write_topo(t) : describe_topology(t));
  });
}

}  // namespace canopy::cli
