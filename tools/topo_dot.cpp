// `canopy topo dot NAME|FILE [--gpus ..] [-o OUT.dot] [--svg OUT.svg]`: the topology as a Graphviz picture.
#include <memory>

#include "topology/topology_dot.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_topo_dot(CLI::App& topo) {
  struct Args {
    TopologyArgs topology;
    std::string out = "-";
    std::string svg;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = topo.add_subcommand("dot", "draw a topology as Graphviz DOT (line width shows bandwidth)");
  add_topology_args(*cmd, args->topology, /*positional=*/true);
  cmd->add_option("--output,-o", args->out, "write DOT here (default: stdout)");
  cmd->add_option("--svg", args->svg, "render an SVG picture here with Graphviz's `dot`");
  cmd->footer(
      "Examples:\n"
      "  canopy topo dot dgx1-v100 > dgx1.dot\n"
      "  canopy topo dot dgx1-v100 --gpus 0,1,2,5 --svg tenant.svg\n"
      "Colours: NVLink green, PCIe blue, CPU links purple, network orange.");
  cmd->callback([args] {
    const std::string dot = topology_dot(resolve_topology(args->topology));
    if (!args->svg.empty()) {
      render_svg(dot, args->svg);
      if (args->out != "-") write_output(args->out, dot);
    } else {
      write_output(args->out, dot);
    }
  });
}

}  // namespace canopy::cli
