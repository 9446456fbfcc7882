// `canopy topo check FILE..`: validate .topo files; every problem as FILE:LINE:COLUMN: error: ..., exit 1 if any.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_topo_check(CLI::App& topo) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = topo.add_subcommand("check", "validate .topo files (or shipped names); exit 1 on any error");
  cmd->add_option("files", *files, "files to check")->required();
  cmd->footer("Example: canopy topo check my-cluster.topo\n"
              "Errors read FILE:LINE:COLUMN: error: MESSAGE, as compilers print them.");
  cmd->callback([files] {
    int failed = 0;
    for (const std::string& f : *files) {
      try {
        const Topology t = load_topology(f);
        const std::size_t hosts = t.host_links().size();
        fmt::print("{}: ok: topology {} with {} GPUs, {} nodes, {} arcs{}\n", f, t.name(), t.gpu_count(),
                   t.nodes().size(), t.arcs().size(),
                   hosts ? fmt::format(", {} host link{}", hosts, hosts == 1 ? "" : "s") : "");
      } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        ++failed;
      }
    }
    if (failed) throw Error(fmt::format("{} of {} topolog{} failed the check", failed, files->size(),
                                        files->size() == 1 ? "y" : "ies"));
  });
}

}  // namespace canopy::cli
