// `canopy topo list`: the shipped topologies, one line each.
#include <fmt/format.h>

#include <algorithm>

#include "topology/shipped_topologies.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_topo_list(CLI::App& topo) {
  CLI::App* cmd = topo.add_subcommand("list", "list the shipped topologies, usable by name everywhere");
  cmd->footer("Example: canopy topo list");
  cmd->callback([] {
    const auto shipped = shipped_topologies();
    std::size_t width = 0;
    for (const auto& s : shipped) width = std::max(width, s.name.size());
    for (const auto& s : shipped) fmt::print("{:<{}}  {}\n", s.name, width, s.description);
  });
}

}  // namespace canopy::cli
