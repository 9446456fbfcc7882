// `canopy algo list|verify`: the shipped collective algorithms (dsl/algorithms/), and the symbolic checker run on one
// of them, optionally against a topology's links.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "dsl/algorithm_check.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"
#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_algo_command(CLI::App& app) {
  CLI::App* algo = app.add_subcommand("algo", "collective algorithms written in Canopy's C++ DSL: list, verify");
  algo->require_subcommand(1);
  algo->footer(
      "Examples:\n"
      "  canopy algo list                                     the shipped algorithms\n"
      "  canopy algo verify ring-allreduce --ranks 8 -t dgx1-v100   prove one correct on a topology's links\n"
      "Writing your own: docs/algorithms.md.");
  CLI::App* list = algo->add_subcommand("list", "the shipped algorithms, one line each");
  list->footer(
      "Each line: a name (what `canopy algo verify`, `canopy msccl export` and `canopy bench -a` take) and what\n"
      "the algorithm does.\n"
      "Example: canopy algo list");
  list->callback([] {
    for (const algo::ShippedAlgorithm& a : algo::shipped_algorithms()) fmt::print("{:<28} {}\n", a.name, a.summary);
  });
  struct Args {
    std::string name;
    int ranks = 0;  // 0: 8, or an XML file's own
    std::string topology;
  };
  auto args = std::make_shared<Args>();
  CLI::App* verify =
      algo->add_subcommand("verify", "check an algorithm symbolically; exit 1 with the checker's messages");
  verify->add_option("name", args->name, "a shipped algorithm (canopy algo list) or MSCCL-IR XML (FILE.xml)")
      ->required();
  verify->add_option("--ranks,-n", args->ranks, "how many ranks to instantiate it for (an XML file says its own)");
  verify->add_option("--topology,-t", args->topology,
                     "also check every copy against this topology's links (a shipped name or a .topo file)");
  verify->footer(
      "\nThe checker executes the program on symbolic chunks and proves its goal's post-condition (a collective's,\n"
      "alltoall's or a custom one's: every output chunk holds exactly the inputs it must, each once); it also\n"
      "rejects reads of unwritten chunks, writes to inputs, copies between ranks without a link, unordered accesses\n"
      "of one chunk (races between channels) and cycles of channel order and data (deadlocks).\n"
      "Errors read NAME:LINE: error: MESSAGE, LINE being the statement.\n"
      "Example: canopy algo verify ring-allreduce --ranks 8 -t dgx1-v100");
  verify->callback([args] {
    const algo::Program p = program_option(args->name, args->ranks);
    std::optional<Topology> topology;
    if (!args->topology.empty()) topology = load_topology(args->topology);
    const std::vector<algo::Diagnostic> found = algo::check_program(p, topology ? &*topology : nullptr);
    for (const algo::Diagnostic& d : found) std::cerr << algo::to_string(d, p.name()) << "\n";
    if (!found.empty())
      throw Error(
          fmt::format("{} on {} ranks: {} problem{}", p.name(), p.ranks(), found.size(), found.size() == 1 ? "" : "s"));
    const int in = p.buffer_chunks(algo::Buffer::input), out = p.buffer_chunks(algo::Buffer::output);
    const std::string buffers = in == out ? fmt::format("{} chunk{} per buffer", in, in == 1 ? "" : "s")
                                          : fmt::format("{} input and {} output chunks per rank", in, out);
    fmt::print("{}: ok: {} on {} ranks, {}, {} statements{}\n", p.name(), p.goal(), p.ranks(), buffers, p.ops().size(),
               topology ? ", every copy over a link of " + topology->name() : "");
  });
}

}  // namespace canopy::cli
