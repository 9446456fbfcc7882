// `canopy topo`: write and inspect topology descriptions (list, show, check, dot, import).
#include "tools/commands.hpp"

namespace canopy::cli {

void add_topo_command(CLI::App& app) {
  CLI::App* topo = app.add_subcommand(
      "topo", "list, show, check, draw and import topologies (.topo files, shipped names, NCCL's topology XML)");
  topo->require_subcommand(1);
  topo->footer(
      "Example: canopy topo show dgx1-v100\n"
      "A topology names GPUs and switches and the links between them, in GB/s per direction, and optionally each\n"
      "GPU's host link (its copy engines' path to pinned host memory, not a link of the graph):\n"
      "  topology my-box\n"
      "  gpus 4\n"
      "  switch plx0\n"
      "  link gpu0 gpu1 50 nvlink2\n"
      "  link gpu2 plx0 31.5 pcie4\n"
      "  host gpu2 31.5 pcie4\n"
      "The full grammar is in docs/topology.md.");
  add_topo_list(*topo);
  add_topo_show(*topo);
  add_topo_check(*topo);
  add_topo_dot(*topo);
  add_topo_import(*topo);
}

}  // namespace canopy::cli
