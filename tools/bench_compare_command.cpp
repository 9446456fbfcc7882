// `canopy bench-compare BASE.json NEW.json [--pair B N]...`: two `canopy bench --json` runs side by side, NEW/BASE
// time and busbw per collective and size (bench/harness/bench_compare.hpp): the A/B of a setting, a commit or a
// machine, with NCCL's own drift between the runs beside it where both ran --vs-nccl.
#include <fmt/format.h>

#include <memory>

#include "bench/harness/bench_compare.hpp"
#include "bench/harness/bench_json_reader.hpp"
#include "core/error.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_bench_compare_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> runs;
    std::vector<std::pair<std::string, std::string>> pairs;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "bench-compare", "NEW/BASE time and busbw of two canopy bench --json runs (an A/B of settings or commits)");
  cmd->add_option("runs", args->runs, "BASE.json NEW.json: rows `canopy bench --json FILE` wrote")->expected(0, 2);
  cmd->add_option("--pair", args->pairs, "another BASE NEW pair (repeat for more)");
  cmd->footer(
      "Examples:\n"
      "  canopy bench -c allreduce --sizes 8M:256M --json base.json\n"
      "  CANOPY_LARGE_BLOCKS=48 canopy bench -c allreduce --sizes 8M:256M --json blocks48.json\n"
      "  canopy bench-compare base.json blocks48.json          what the setting changed, size by size\n"
      "  canopy bench-compare a.json b.json --pair a-bf16.json b-bf16.json\n"
      "Each table (collective or program, type, operator, ranks; the processes each run used in its heading): size,\n"
      "BASE and NEW time (us), time x = NEW/BASE, BASE and NEW busbw (GB/s), busbw x = BASE time / NEW time, NCCL x =\n"
      "NEW's NCCL time / BASE's where both ran --vs-nccl (how far the machine itself moved between the runs: read\n"
      "busbw x against it), #wrong (0, - when neither run checked, WRONG BASE/NEW counts). Then the geometric mean of\n"
      "busbw x in the bands <= 64K, 1M-16M, >= 256M. Sizes or tables only one run has are listed. Alternate the runs\n"
      "(BASE, NEW, BASE, NEW) to see the machine's own spread.\n"
      "Exit status 1 when a size has a nonzero #wrong, a file cannot be read, or two runs have nothing in common.\n"
      "Docs: docs/runtime.md, \"Comparing two bench runs\".");
  cmd->callback([args] {
    const auto pairs = base_new_pairs(args->runs, args->pairs, "run", "BASE.json NEW.json");
    if (pairs.empty()) throw Error("nothing to compare: give BASE.json NEW.json or --pair BASE NEW");
    const char* what = "the rows `canopy bench --json FILE` wrote";
    int wrong = 0;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const auto& [base_path, new_path] = pairs[i];
      const BenchComparison c = compare_bench_rows(read_bench_rows_json(read_input_file(base_path, what), base_path),
                                                   read_bench_rows_json(read_input_file(new_path, what), new_path));
      if (pairs.size() > 1) fmt::print("{}=== pair {} of {}\n", i == 0 ? "" : "\n", i + 1, pairs.size());
      fmt::print("{}", bench_comparison_text(c, base_path, new_path));
      std::fflush(stdout);
      if (c.tables.empty())
        throw Error(fmt::format("'{}' and '{}' have no collective, type, operator, rank count and size in common",
                                base_path, new_path));
      wrong += c.wrong_sizes;
    }
    if (wrong > 0)
      throw Error(fmt::format("{} size{} had a nonzero #wrong (marked WRONG above)", wrong, wrong == 1 ? "" : "s"));
  });
}

}  // namespace canopy::cli
