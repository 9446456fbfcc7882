// `canopy nccl-tests-compare` as users run it on real nccl-tests logs (tests/data/nccl-tests): a table per type with
// the ratios of the rows, --dtype/--op, the failure lines of a failed run, --dir's real/canopy pairs, --pair, the
// check beside a real canopy bench --json file, --json, exit 1 for a nonzero #wrong, a log cut mid-row and a missing
// file; --help teaches with examples.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

testing::CommandRun canopy(const std::string& args, const std::string& redirect = "2>&1") {
  return testing::run_command(std::string(CANOPY_CLI) + " nccl-tests-compare " + args + " " + redirect);
}

std::string data(const std::string& file) { return (testing::source_dir() / "tests/data/nccl-tests" / file).string(); }
const std::string kRun = "h100-2026-11-26/";

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("canopy-ntc-" + std::to_string(::getpid()) + "-" + name)).string();
}

TEST(NcclTestsCompareCli, PrintsARatioTablePerTypeAndABandSummary) {
  const testing::CommandRun r = canopy(data(kRun + "nccltests-broadcast-real-g1.log") + " " +
                                       data(kRun + "nccltests-broadcast-canopy-g1.log") + " --dtype float");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("nccltests-broadcast-real-g1.log: nccl-tests 2.19.6, NCCL 2.28.3 (headers 2.28.9)"));
  EXPECT_THAT(r.output, HasSubstr("#   run 1 (line 1): broadcast_perf, 1 rank on NVIDIA H100 80GB HBM3, 13 rows, Out "
                                  "of bounds values: 0 OK"));
  EXPECT_THAT(r.output, HasSubstr("# broadcast_perf float none, 1 rank, root 0: NEW/BASE\n"));
  // 128 MiB: NCCL 97.55 us, Canopy 101.75 us; busbw 1375.9 vs 1319.0 GB/s (ratio 97.55/101.75 = 0.959).
  EXPECT_THAT(r.output, HasSubstr("     128M     97.55    101.75   1.043    1375.9    1319.0   0.959"));
  EXPECT_THAT(r.output, Not(HasSubstr("bfloat16")));
  EXPECT_THAT(r.output,
              HasSubstr("# broadcast_perf, 1 rank: busbw ratio NEW/BASE, geometric mean over every type and op"));
  EXPECT_THAT(r.output, HasSubstr("#   >= 256M  -  (no size in this band)"));
}

// Logs of several rounds (the real NCCL's log twice, as if run twice; the library's once): the range and a verdict
// per size under each table, and in the JSON; a bad --target is named.
TEST(NcclTestsCompareCli, RoundsGiveARangeAndTheTargetAVerdict) {
  const std::string twice = temp("twice.log");
  {
    std::ofstream out(twice);
    const std::string real = testing::read_file(data(kRun + "nccltests-broadcast-real-g1.log"));
    out << real << real;
  }
  const std::string json = temp("rounds.json");
  const testing::CommandRun r =
      canopy(twice + " " + data(kRun + "nccltests-broadcast-canopy-g1.log") + " --dtype float --target 1.0 --json " +
             json);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# busbw ratio NEW/BASE out of place over the rounds"));
  EXPECT_THAT(r.output, HasSubstr("target 1, met only where the whole range clears it"));
  // 128 MiB: both rounds of the real NCCL took 97.55 us, the library 101.75: 0.959 .. 0.959, below 1.
  EXPECT_THAT(r.output, HasSubstr("     128M   0.959    0.959 .. 0.959      2/1             missed"));
  const nlohmann::json j = nlohmann::json::parse(testing::read_file(json));
  const nlohmann::json& last = j["pairs"][0]["tables"][0]["sizes"].back();
  EXPECT_EQ(last["verdict"], "missed");
  EXPECT_EQ(last["out_of_place"]["base_rounds"], 2);
  EXPECT_EQ(last["out_of_place"]["new_rounds"], 1);
  EXPECT_NEAR(last["out_of_place"]["busbw_ratio_min"].get<double>(), 97.55 / 101.75, 1e-12);
  const testing::CommandRun bad = canopy(twice + " " + twice + " --target -1");
  EXPECT_EQ(bad.status, 1) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("--target -1: give a busbw ratio NEW/BASE above 0"));
  std::filesystem::remove(twice);
  std::filesystem::remove(json);
}

TEST(NcclTestsCompareCli, FailedRunsShowTheirFailureLinesAndNothingInCommonIsAnError) {
  const testing::CommandRun r = canopy(data(kRun + "nccltests-reduce_scatter-real-g1.log") + " " +
                                       data(kRun + "nccltests-all_reduce-canopy-np2-R1.log"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("832 rows, stopped before its footer (a failure or a killed run)"));
  EXPECT_THAT(r.output, HasSubstr("#   failure at line 843: vm: Test NCCL failure reduce_scatter.cu:49 'invalid "
                                  "argument"));
  EXPECT_THAT(r.output, HasSubstr("#   failure at line 9: vm: Test CUDA failure common.cu:1569 'CUDA-capable device(s) "
                                  "is/are busy or unavailable'"));
  EXPECT_THAT(r.output, HasSubstr("#   9 other lines skipped (not nccl-tests' own), the first at line 1: [vm:17441] "
                                  "Warning"));
  EXPECT_THAT(r.output, HasSubstr("reduce_scatter_perf, 1 rank: only in BASE"));
  EXPECT_THAT(r.output, HasSubstr("canopy: error: the two logs have nothing in common to compare"));
}

TEST(NcclTestsCompareCli, DirPairsRealWithCanopyLogsAndPairAddsMore) {
  const testing::CommandRun r = canopy(
      "--dir " + data("h100-2026-11-26") + " --pair " + data("h200-2026-11-25/nccltests-all_gather-canopy-np2-R0.log") +
      " " + data("h200-2026-11-25/nccltests-all_gather-canopy-np2-R1.log") + " --dtype f32 --op none");
  EXPECT_EQ(r.status, 0) << r.output;
  // --pair first (given pairs come before a folder's), then the folder's two pairs in name order.
  EXPECT_THAT(r.output,
              HasSubstr("=== pair 1 of 3: BASE " + data("h200-2026-11-25/nccltests-all_gather-canopy-np2-R0.log")));
  EXPECT_THAT(r.output, HasSubstr("=== pair 2 of 3: BASE " + data(kRun + "nccltests-all_gather-real-g1.log") +
                                  ", NEW " + data(kRun + "nccltests-all_gather-canopy-g1.log")));
  EXPECT_THAT(r.output, HasSubstr("=== pair 3 of 3: BASE " + data(kRun + "nccltests-broadcast-real-g1.log")));
  EXPECT_THAT(r.output, HasSubstr("# all_gather_perf float none, 2 ranks: NEW/BASE"));
  EXPECT_THAT(r.output, HasSubstr("# all_gather_perf float none, 1 rank: NEW/BASE"));
  const testing::CommandRun empty = canopy("--dir " + data("h200-2026-11-25"));
  EXPECT_EQ(empty.status, 1);
  EXPECT_THAT(empty.output, HasSubstr("no FILE-real-X.log with a FILE-canopy-X.log beside it"));
}

TEST(NcclTestsCompareCli, BenchRowsStandBesideWithAVerdictAndJsonHoldsItAll) {
  const std::string bench = (testing::source_dir() / "bench/results/h200x2-bench-final.json").string();
  const std::string json = temp("out.json");
  const testing::CommandRun r =
      canopy(data(kRun + "nccltests-broadcast-real-g1.log") + " " + data(kRun + "nccltests-broadcast-canopy-g1.log") +
             " --dtype float --bench " + bench + " --json " + json);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# beside canopy bench (2 ranks, NVIDIA H200 x2): busbw ratio NEW/BASE out of "
                                  "place vs Canopy/NCCL"));
  EXPECT_THAT(r.output, HasSubstr("# note: canopy bench ran 2 ranks, nccl-tests 1: not the same measurement"));
  EXPECT_THAT(r.output, HasSubstr("    size  nccl-tests     bench   differ  within 5 %  NEW/Canopy  BASE/NCCL"));
  EXPECT_THAT(r.output, HasSubstr("# canopy bench check: "));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("# time NEW/Canopy [0-9.]+, BASE/NCCL [0-9.]+ \\(geometric means"));
  EXPECT_THAT(r.output, HasSubstr(" of 13 sizes within 5 %"));
  EXPECT_THAT(r.output, Not(HasSubstr("calls a loop")));  // that bench JSON predates "iters": nothing to compare
  EXPECT_THAT(r.output, Not(HasSubstr("timers")));        // one process of one thread: nothing averaged

  const nlohmann::json j = nlohmann::json::parse(testing::read_file(json));
  std::filesystem::remove(json);
  ASSERT_EQ(j["pairs"].size(), 1u);
  const nlohmann::json& p = j["pairs"][0];
  EXPECT_EQ(p["base"]["runs"][0]["collective"], "broadcast_perf");
  ASSERT_EQ(p["tables"].size(), 1u);
  const nlohmann::json& t = p["tables"][0];
  EXPECT_EQ(t["type"], "float");
  EXPECT_EQ(t["root"], 0);
  ASSERT_EQ(t["sizes"].size(), 13u);
  const nlohmann::json& big = t["sizes"][12];
  EXPECT_EQ(big["bytes"], 134217728);
  EXPECT_DOUBLE_EQ(big["out_of_place"]["time_ratio"].get<double>(), 101.75 / 97.55);
  EXPECT_DOUBLE_EQ(big["out_of_place"]["busbw_ratio"].get<double>(), 97.55 / 101.75);
  EXPECT_DOUBLE_EQ(big["in_place"]["new_busbw_GBps"].get<double>(), 7984.4);
  ASSERT_EQ(t["bench"].size(), 13u);
  EXPECT_EQ(t["bench"][12]["bench_ranks"], 2);
  EXPECT_GT(t["bench"][12]["new_over_bench"].get<double>(), 0);
  EXPECT_GT(t["bench"][12]["base_over_bench"].get<double>(), 0);
  EXPECT_EQ(p["bench_sizes"], 13);
  EXPECT_GT(p["new_over_bench"].get<double>(), 0);
  EXPECT_EQ(p["summaries"][0]["bands"][2]["out_of_place"], nullptr);
}

// The bench's loop length beside nccl-tests' (-n 2 in these logs): the same real bench rows, each given "iters": 20
// as canopy bench --json writes it now.
TEST(NcclTestsCompareCli, ABenchOfAnotherLoopLengthIsNamed) {
  nlohmann::json rows =
      nlohmann::json::parse(testing::read_file(testing::source_dir() / "bench/results/h200x2-bench-final.json"));
  for (nlohmann::json& row : rows) row["iters"] = 20;
  const std::string bench = temp("iters.json"), json = temp("iters-out.json");
  std::ofstream(bench) << rows.dump();
  const testing::CommandRun r =
      canopy(data(kRun + "nccltests-broadcast-real-g1.log") + " " + data(kRun + "nccltests-broadcast-canopy-g1.log") +
             " --dtype float --bench " + bench + " --json " + json);
  std::filesystem::remove(bench);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# note: nccl-tests timed 2 calls a loop (-n 2), canopy bench 20 (--iters 20): below "
                                  "~1 MiB a call's time depends on the loop's length"));
  const nlohmann::json j = nlohmann::json::parse(testing::read_file(json));
  std::filesystem::remove(json);
  const nlohmann::json& t = j["pairs"][0]["tables"][0];
  EXPECT_EQ(t["base_iters"], 2);
  EXPECT_EQ(t["new_iters"], 2);
  EXPECT_EQ(t["bench"][0]["bench_iters"], 20);
  EXPECT_EQ(j["pairs"][0]["base"]["runs"][0]["iters"], 2);
}

// Two processes' runs (mpirun -np 2, real logs) beside a real canopy bench --procs 2 file: nccl-tests' time is the
// mean of the two processes' unless it ran with -a 3, which the log does not say, so the check says so.
TEST(NcclTestsCompareCli, RunsOfSeveralProcessesAreNamedBesideTheBenchsSlowestRank) {
  const std::string np2 = "h200-2026-11-25/nccltests-all_gather-canopy-np2-R";
  const std::string bench = (testing::source_dir() / "bench/results/h200x2-procs2-5fe65bc-f32.json").string();
  const std::string json = temp("timers-out.json");
  const testing::CommandRun r =
      canopy(data(np2 + "0.log") + " " + data(np2 + "1.log") + " --dtype float --bench " + bench + " --json " + json);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# note: nccl-tests made each size's time from 2 timers (processes x threads): their "
                                  "mean, unless it ran with -a (its log does not say); canopy bench reports the "
                                  "slowest rank's, so run nccl-tests with -a 3 (the slowest) to compare alike"));
  const nlohmann::json j = nlohmann::json::parse(testing::read_file(json));
  std::filesystem::remove(json);
  const nlohmann::json& p = j["pairs"][0];
  EXPECT_EQ(p["base"]["runs"][0]["timers"], 2);
  EXPECT_EQ(p["tables"][0]["base_timers"], 2);
  EXPECT_EQ(p["tables"][0]["new_timers"], 2);
  EXPECT_FALSE(p["tables"][0]["bench"].empty());
}

TEST(NcclTestsCompareCli, ANonzeroWrongCountIsMarkedAndExitsOne) {
  std::string text = testing::read_file(data(kRun + "nccltests-broadcast-canopy-g1.log"));
  const std::string row = "   134217728      33554432     float    none       0   101.75  1319.0  1319.0       0";
  text.replace(text.find(row) + row.size() - 1, 1, "7");
  const std::string wrong = temp("wrong.log");
  std::ofstream(wrong) << text;
  const testing::CommandRun r = canopy(data(kRun + "nccltests-broadcast-real-g1.log") + " " + wrong + " --dtype float");
  std::filesystem::remove(wrong);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("  WRONG 0/0 7/0\n"));
  EXPECT_THAT(r.output, HasSubstr("canopy: error: 1 size had a nonzero #wrong (marked WRONG above)"));
}

TEST(NcclTestsCompareCli, ALogCutMidRowOrMissingIsExitOneNamingIt) {
  const std::string text = testing::read_file(data(kRun + "nccltests-all_gather-real-g1.log"));
  const std::string cut = temp("cut.log");
  std::ofstream(cut) << text.substr(0, text.find(" float ") + 20);
  testing::CommandRun r = canopy(cut + " " + data(kRun + "nccltests-all_gather-canopy-g1.log"));
  std::filesystem::remove(cut);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("canopy: error: " + cut + ":102: error: a data row has 13 columns"));
  r = canopy("/nonexistent/real.log " + data(kRun + "nccltests-all_gather-canopy-g1.log"));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("cannot read '/nonexistent/real.log': give the path of an nccl-tests log"));
  r = canopy(data(kRun + "nccltests-all_gather-real-g1.log"));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("one log given"));
  EXPECT_THAT(canopy("").output, HasSubstr("nothing to compare: give BASE.log NEW.log"));
}

TEST(NcclTestsCompareCli, HelpTeachesWithExamples) {
  const testing::CommandRun r = canopy("--help");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("canopy nccl-tests-compare real.log canopy.log"));
  EXPECT_THAT(r.output, HasSubstr("LD_PRELOAD=build/libcanopy_nccl.so all_reduce_perf"));
  EXPECT_THAT(r.output, HasSubstr("--bench bench.json"));
  EXPECT_THAT(r.output, HasSubstr("busbw x = NEW/BASE busbw"));
  EXPECT_THAT(testing::run_command(std::string(CANOPY_CLI) + " --help").output, HasSubstr("nccl-tests-compare"));
}

}  // namespace
}  // namespace canopy
