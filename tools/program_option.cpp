// How the commands that take a collective-algorithm program find it (`NAME|FILE.xml`), and the machine a program runs
// on when no topology is named (see commands.hpp).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "dsl/algorithms/shipped_algorithms.hpp"
#include "core/error.hpp"
#include "dsl/msccl_xml.hpp"
#include "topology/topo_reader.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

algo::Program program_option(const std::string& name_or_file, int ranks) {
  const bool file = name_or_file.ends_with(".xml") || name_or_file.find('/') != std::string::npos;
  if (!file) return algo::shipped_algorithm(name_or_file, ranks > 0 ? ranks : 8);
  std::ifstream in(name_or_file, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read algorithm file '{}': check the path", name_or_file));
  std::ostringstream text;
  text << in.rdbuf();
  algo::Program p = algo::from_msccl_xml(text.str(), name_or_file);
  if (ranks > 0 && ranks != p.ranks())
    throw Error(fmt::format("{} is written for {} ranks; --ranks {} asks for {}: leave --ranks out or match it",
                            name_or_file, p.ranks(), ranks, ranks));
  return p;
}

Topology switch_topology(int gpus) {
  std::string text = fmt::format("topology switch-{0}\ngpus {0}\nswitch nvs0\n", gpus);
  for (int g = 0; g < gpus; ++g) text += fmt::format("link gpu{} nvs0 478.125 nvlink4\n", g);
  return read_topo(text, fmt::format("switch-{}", gpus));
}

}  // namespace canopy::cli
