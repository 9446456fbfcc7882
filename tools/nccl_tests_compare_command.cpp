// `canopy nccl-tests-compare BASE.log NEW.log [--pair B N]... [--dir D]... [--bench bench.json]... [--json out]`:
// reads nccl-tests' stdout of the same binaries run twice (e.g. the real NCCL, then through libcanopy_nccl.so) and
// prints NEW/BASE ratio tables (bench/harness/nccl_tests_compare.hpp), checked against canopy bench's own ratios.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "bench/harness/bench_json_reader.hpp"
#include "core/error.hpp"
#include "tools/commands.hpp"
#include "tools/nccl_tests_report.hpp"

namespace canopy::cli {
namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// A type or operator as the user wrote it matches nccl-tests' name for it, in Canopy's spelling or nccl-tests'.
bool type_matches(const std::string& wanted, const std::string& logged) {
  const auto a = parse_data_type(wanted), b = parse_data_type(logged);
  return a && b ? *a == *b : wanted == logged;
}

void keep_only(NcclTestsOutput& log, const std::vector<std::string>& dtypes, const std::vector<std::string>& ops) {
  for (NcclTestsRun& run : log.runs)
    std::erase_if(run.rows, [&](const NcclTestsRow& row) {
      const bool type_ok = dtypes.empty() || std::any_of(dtypes.begin(), dtypes.end(), [&](const std::string& d) {
                             return type_matches(d, row.type);
                           });
      const bool op_ok = ops.empty() || std::find(ops.begin(), ops.end(), row.redop) != ops.end();
      return !(type_ok && op_ok);
    });
}

// bench/device-run's names: nccltests-NAME-real-SUFFIX.log beside nccltests-NAME-canopy-SUFFIX.log.
std::vector<std::pair<std::string, std::string>> pairs_in(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(fmt::format("--dir '{}' is not a folder: give the folder of a device run's logs", dir));
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::size_t at = name.find("-real-");
    if (at == std::string::npos || e.path().extension() != ".log") continue;
    const fs::path other = e.path().parent_path() / (name.substr(0, at) + "-canopy-" + name.substr(at + 6));
    if (fs::exists(other)) pairs.emplace_back(e.path().string(), other.string());
  }
  std::sort(pairs.begin(), pairs.end());
  if (pairs.empty())
    throw Error(
        fmt::format("--dir '{}': no FILE-real-X.log with a FILE-canopy-X.log beside it (bench/device-run's "
                    "nccltests names); name the logs with --pair BASE NEW instead",
                    dir));
  return pairs;
}

}  // namespace

void add_nccl_tests_compare_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> logs;
    std::vector<std::pair<std::string, std::string>> pairs;
    std::vector<std::string> dirs;
    std::vector<std::string> bench;
    bool bench_in_place = false;
    double within = 5;
    double target = 0;  // 0: none
    std::string dtypes, ops;
    std::string json;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "nccl-tests-compare", "NEW/BASE time and busbw ratios of two nccl-tests logs (e.g. through Canopy vs NCCL)");
  cmd->add_option("logs", args->logs, "BASE.log NEW.log: nccl-tests' stdout, the same binary and flags run twice")
      ->expected(0, 2);
  cmd->add_option("--pair", args->pairs, "another BASE NEW pair (repeat for more)");
  cmd->add_option("--dir", args->dirs,
                  "a folder of bench/device-run's logs: each nccltests-X-real-Y.log beside nccltests-X-canopy-Y.log "
                  "is a pair (repeatable)");
  cmd->add_option("--bench", args->bench,
                  "canopy bench --vs-nccl --json rows (repeatable): their Canopy/NCCL busbw ratio shown beside each "
                  "table's, same collective, type, op and size, with each log's time over the bench's (NEW/Canopy, "
                  "BASE/NCCL: where a difference comes from)");
  cmd->add_flag("--bench-in-place", args->bench_in_place,
                "the bench rows came from canopy bench --in-place: check the in-place ratios (default: out of place)");
  cmd->add_option("--within", args->within, "percent by which the two ratios may differ and still agree")
      ->capture_default_str();
  cmd->add_option("--target", args->target,
                  "a busbw ratio NEW/BASE to meet, e.g. 1.0: a verdict per size, met only where the range over the "
                  "rounds clears it");
  cmd->add_option("--dtype", args->dtypes, "only these types, e.g. float,bf16 (nccl-tests' names or Canopy's)");
  cmd->add_option("--op", args->ops, "only these redops as nccl-tests names them: sum,prod,min,max,avg,mulsum,none");
  cmd->add_option("--json", args->json, "also write the tables as JSON to this file ('-' = stdout, tables to stderr)");
  cmd->footer(
      "Examples:\n"
      "  all_reduce_perf -b 8 -e 128M -f 4 -g 1 > real.log                      the real NCCL, then through Canopy:\n"
      "  LD_PRELOAD=build/libcanopy_nccl.so all_reduce_perf -b 8 -e 128M -f 4 -g 1 > canopy.log\n"
      "  canopy nccl-tests-compare real.log canopy.log                         a table per type and op\n"
      "  canopy nccl-tests-compare real.log canopy.log --dtype float --op sum  one of them\n"
      "  canopy nccl-tests-compare --dir OUT                  bench/device-run's nccltests-*-real/canopy-*.log pairs\n"
      "  canopy bench -c allreduce --sizes 8:128M:4 --vs-nccl --json bench.json\n"
      "  canopy nccl-tests-compare real.log canopy.log --bench bench.json      the issue's 5 % check\n"
      "  canopy nccl-tests-compare a.log b.log --pair c.log d.log --json out.json\n"
      "  canopy nccl-tests-compare real.log canopy.log --target 1.0     logs of several rounds appended: medians,\n"
      "                                                                  ranges and a verdict per size\n"
      "Each table: size, then out of place and in place: BASE and NEW time (us), time x = NEW/BASE time, BASE and\n"
      "NEW busbw (GB/s), busbw x = NEW/BASE busbw (at equal size and ranks BASE time/NEW time, computed so because\n"
      "nccl-tests prints bandwidths to 2 decimals); #wrong: 0, n/a (not checked, -c 0), or WRONG with BASE out/in\n"
      "NEW out/in counts. Tables are keyed by binary, rank count, type, redop and root; sizes only one log has are\n"
      "listed under the table. Per binary: the geometric mean of busbw x in the bands <= 64K, 1M-16M, >= 256M.\n"
      "Logs holding each size several times (rounds appended, the two libraries alternating, as bench/device-run\n"
      "runs them) give each size's median row, and under the table its busbw x with the range the rounds allow\n"
      "(BASE's fastest / NEW's slowest .. BASE's slowest / NEW's fastest); --target T says met only where the whole\n"
      "range is >= T, missed where it is below, else overlaps.\n"
      "With --bench: per size both have, busbw x beside canopy bench's Canopy busbw / NCCL busbw (NCCL time /\n"
      "Canopy time) and whether they agree within --within percent. Time both programs alike: nccl-tests' -n as\n"
      "the bench's --iters (a note names unlike loops), and under mpirun nccl-tests' -a 3 (the slowest rank's\n"
      "time, as the bench reports; its default is the mean of its processes', and its log does not say which:\n"
      "a note names runs of several processes or threads). Lines that are not nccl-tests' own (mpirun,\n"
      "NCCL_DEBUG) are counted; failure lines (Test NCCL failure, signals, non-zero exits) are printed.\n"
      "Exit status 1 when a size has a nonzero #wrong or a log cannot be read (a row cut short names its line).\n"
      "Docs: docs/nccl-api.md, \"Comparing nccl-tests runs\".");
  cmd->callback([args] {
    std::vector<std::pair<std::string, std::string>> pairs =
        base_new_pairs(args->logs, args->pairs, "log", "BASE.log NEW.log");
    for (const std::string& dir : args->dirs) {
      const auto found = pairs_in(dir);
      pairs.insert(pairs.end(), found.begin(), found.end());
    }
    if (pairs.empty()) throw Error("nothing to compare: give BASE.log NEW.log, --pair BASE NEW or --dir FOLDER");
    if (!(args->within >= 0)) throw Error(fmt::format("--within {}: give a percent, 0 or more", args->within));
    if (args->target < 0 || !std::isfinite(args->target))
      throw Error(fmt::format("--target {}: give a busbw ratio NEW/BASE above 0, e.g. 1.0", args->target));

    NcclTestsReportOptions options;
    options.bench_in_place = args->bench_in_place;
    options.tolerance = args->within / 100;
    if (args->target > 0) options.target = args->target;
    for (const std::string& path : args->bench) {
      const std::vector<BenchRow> rows =
          read_bench_rows_json(read_input_file(path, "a file `canopy bench --json FILE` wrote"), path);
      options.bench.insert(options.bench.end(), rows.begin(), rows.end());
    }
    const std::vector<std::string> dtypes = split_list(args->dtypes), ops = split_list(args->ops);

    const bool json_stdout = args->json == "-";
    std::FILE* text_out = json_stdout ? stderr : stdout;
    nlohmann::ordered_json json = {{"pairs", nlohmann::ordered_json::array()}};
    int wrong = 0, compared = 0;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      NcclTestsPair pair;
      pair.base_path = pairs[i].first;
      pair.new_path = pairs[i].second;
      const char* what = "an nccl-tests log (its stdout, e.g. all_reduce_perf -g 1 > real.log)";
      pair.base = parse_nccl_tests_output(read_input_file(pair.base_path, what), pair.base_path);
      pair.newer = parse_nccl_tests_output(read_input_file(pair.new_path, what), pair.new_path);
      keep_only(pair.base, dtypes, ops);
      keep_only(pair.newer, dtypes, ops);
      const NcclTestsPairReport report = make_nccl_tests_report(pair, options);
      if (pairs.size() > 1)
        fmt::print(text_out, "{}=== pair {} of {}: BASE {}, NEW {}\n", i == 0 ? "" : "\n", i + 1, pairs.size(),
                   pair.base_path, pair.new_path);
      fmt::print(text_out, "{}", nccl_tests_report_text(pair, report, options));
      if (report.comparison.tables.empty())
        fmt::print(text_out, "# nothing in common: no binary, rank count, type, op and size in both logs{}\n",
                   dtypes.empty() && ops.empty() ? "" : " (after --dtype/--op)");
      std::fflush(text_out);
      wrong += report.wrong_sizes;
      compared += report.comparison.tables.empty() ? 0 : 1;
      json["pairs"].push_back(nccl_tests_report_json(pair, report, options));
    }
    if (!args->json.empty()) write_output(args->json, json.dump(1) + "\n");
    if (wrong > 0)
      throw Error(fmt::format("{} size{} had a nonzero #wrong (marked WRONG above)", wrong, wrong == 1 ? "" : "s"));
    if (compared == 0)
      throw Error(pairs.size() == 1 ? "the two logs have nothing in common to compare (see the notes above)"
                                    : "no pair had anything in common to compare (see the notes above)");
  });
}

}  // namespace canopy::cli
