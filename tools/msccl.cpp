// `canopy msccl export|import`: MSCCL-IR XML, the interchange format of msccl-tools and the MSCCL runtime, for
// algorithm programs (dsl/msccl_xml.hpp). Import verifies with the symbolic checker.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "dsl/algorithm_check.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"
#include "core/error.hpp"
#include "dsl/msccl_xml.hpp"
#include "topology/shipped_topologies.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_msccl_command(CLI::App& app) {
  CLI::App* msccl = app.add_subcommand("msccl", "MSCCL-IR XML: export a verified algorithm, import and verify one");
  msccl->require_subcommand(1);
  msccl->footer(
      "Examples:\n"
      "  canopy msccl export ring-allreduce --ranks 8 -o ring.xml   a shipped algorithm for MSCCL's runtime\n"
      "  canopy msccl import allreduce_ndv2.xml -t dgx1-v100       verify msccl-tools' XML on a topology\n"
      "The format and what is checked: docs/algorithms.md.");
  struct Args {
    std::string name;
    int ranks = 8;
    std::string out = "-";
    std::string file;
    std::string topology;
  };
  auto args = std::make_shared<Args>();
  CLI::App* exp = msccl->add_subcommand("export", "write a shipped algorithm as MSCCL-IR XML (it is verified first)");
  exp->add_option("name", args->name, "a shipped algorithm (canopy algo list)")->required();
  exp->add_option("--ranks,-n", args->ranks, "how many ranks")->capture_default_str();
  exp->add_option("--out,-o", args->out, "the XML file (- for stdout)")->capture_default_str();
  exp->footer("Example: canopy msccl export ring-allreduce --ranks 8 -o ring.xml");
  exp->callback([args] {
    const algo::Program p = algo::shipped_algorithm(args->name, args->ranks);
    const std::vector<algo::Diagnostic> found = algo::check_program(p);
    for (const algo::Diagnostic& d : found) std::cerr << algo::to_string(d, p.name()) << "\n";
    if (!found.empty()) throw Error(fmt::format("{} does not verify: not exported", p.name()));
    write_output(args->out, algo::to_msccl_xml(p));
  });
  CLI::App* imp = msccl->add_subcommand("import",
                                        "read MSCCL-IR XML (as msccl-tools writes it) and verify it; exit 1 on "
                                        "any problem");
  imp->add_option("file", args->file, "the XML file")->required();
  imp->add_option("--topology,-t", args->topology, "also check every transfer against this topology's links");
  imp->footer(
      "Errors read FILE:LINE: error: MESSAGE, LINE being the XML step's.\n"
      "Example: canopy msccl import allreduce_ndv2.xml -t dgx1-v100");
  imp->callback([args] {
    std::ifstream in(args->file, std::ios::binary);
    if (!in) throw Error(fmt::format("cannot read '{}': check the path", args->file));
    std::stringstream text;
    text << in.rdbuf();
    const algo::Program p = algo::from_msccl_xml(text.str(), args->file);
    std::optional<Topology> topology;
    if (!args->topology.empty()) topology = load_topology(args->topology);
    const std::vector<algo::Diagnostic> found = algo::check_program(p, topology ? &*topology : nullptr);
    for (const algo::Diagnostic& d : found) std::cerr << algo::to_string(d, args->file) << "\n";
    if (!found.empty())
      throw Error(fmt::format("{}: {} problem{}", args->file, found.size(), found.size() == 1 ? "" : "s"));
    fmt::print("{}: ok: {} '{}' on {} ranks, {} statements verified{}\n", args->file, p.goal(), p.name(), p.ranks(),
               p.ops().size(), topology ? ", every transfer over a link of " + topology->name() : "");
  });
}

}  // namespace canopy::cli
