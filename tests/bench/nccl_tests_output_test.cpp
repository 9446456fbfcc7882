// parse_nccl_tests_output on real nccl-tests 2.19.6 logs from the device machine (tests/data/nccl-tests): headers,
// row counts and exact values, every type of -d all, failure lines (NCCL's invalid argument, a CUDA failure and
// segfaults under mpirun, a timed-out run), other lines skipped; a real log cut mid-row or garbled in the test
// gives an error naming the line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "bench/harness/nccl_tests_output.hpp"
#include "core/error.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

std::string log_path(const std::string& file) {
  return (testing::source_dir() / "tests/data/nccl-tests" / file).string();
}
NcclTestsOutput parse_log(const std::string& file) {
  return parse_nccl_tests_output(testing::read_file(log_path(file)), file);
}
std::string error_of(const std::string& text, const std::string& source) {
  try {
    parse_nccl_tests_output(text, source);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(NcclTestsOutput, ReadsHeaderRowsAndFooterOfAFinishedRun) {
  const NcclTestsOutput log = parse_log("h100-2026-11-26/nccltests-broadcast-real-g1.log");
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclTestsRun& r = log.runs[0];
  EXPECT_EQ(r.first_line, 1);
  EXPECT_EQ(r.version_line, "nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22803");
  EXPECT_EQ(r.version, "2.19.6");
  EXPECT_EQ(r.nccl_headers, "22809");
  EXPECT_EQ(r.nccl_library, "22803");
  EXPECT_EQ(r.collective, "broadcast_perf");
  EXPECT_THAT(r.parameters, HasSubstr("nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 4(factor)"));
  EXPECT_EQ(r.iters, 2);  // "warmup iters: 1 iters: 2 agg iters: 1": the timed loop's -n, not the warm-up's
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0], "Rank  0 Group  0 Pid  18174 on         vm device  0 [0000:00:06] NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.ranks(), 1);
  EXPECT_EQ(r.rows.size(), 156u);  // 12 types x 13 sizes (8 B .. 128 MiB, factor 4)
  const NcclTestsRow& first = r.rows.front();
  EXPECT_EQ(first.line, 11);
  EXPECT_EQ(first.bytes, 8u);
  EXPECT_EQ(first.count, 8u);
  EXPECT_EQ(first.type, "int8");
  EXPECT_EQ(first.redop, "none");
  EXPECT_EQ(first.root, 0);
  EXPECT_DOUBLE_EQ(first.out_of_place.time_us, 8.73);
  EXPECT_DOUBLE_EQ(first.in_place.time_us, 0.52);
  EXPECT_DOUBLE_EQ(first.in_place.algbw_gbps, 0.02);
  EXPECT_EQ(first.out_of_place.wrong, 0);
  const NcclTestsRow& last = r.rows.back();
  EXPECT_EQ(last.line, 166);
  EXPECT_EQ(last.bytes, 134217728u);
  EXPECT_EQ(last.type, "f8e5m2");
  EXPECT_DOUBLE_EQ(last.out_of_place.time_us, 129.61);
  EXPECT_DOUBLE_EQ(last.out_of_place.busbw_gbps, 1035.6);
  EXPECT_DOUBLE_EQ(last.in_place.algbw_gbps, 173073);  // nccl-tests widens its bandwidths past 6 characters
  EXPECT_EQ(r.out_of_bounds, 0);
  EXPECT_TRUE(r.out_of_bounds_ok);
  ASSERT_TRUE(r.avg_busbw_gbps);
  EXPECT_DOUBLE_EQ(*r.avg_busbw_gbps, 11655.2);
  EXPECT_TRUE(r.concluded);
  EXPECT_TRUE(log.failures.empty());
  EXPECT_TRUE(log.skipped.empty());
}

TEST(NcclTestsOutput, DashDAllGivesEveryTypeAndDashOAllEveryOp) {
  const std::set<std::string> twelve = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                                        "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  for (const char* file :
       {"h100-2026-11-26/nccltests-all_gather-real-g1.log", "h100-2026-11-26/nccltests-all_gather-canopy-g1.log",
        "h100-2026-11-26/nccltests-broadcast-canopy-g1.log",
        "h200-2026-11-25/nccltests-all_gather-canopy-np2-R1.log"}) {
    const NcclTestsOutput log = parse_log(file);
    std::set<std::string> types;
    for (const NcclTestsRow& row : log.runs.at(0).rows) types.insert(row.type);
    EXPECT_EQ(types, twelve) << file;
  }
  const NcclTestsOutput all_reduce = parse_log("h100-2026-11-26/nccltests-all_reduce-canopy-g1.log");
  ASSERT_EQ(all_reduce.runs.size(), 1u);
  EXPECT_EQ(all_reduce.runs[0].rows.size(), 936u);  // 12 types x 6 ops x 13 sizes
  std::set<std::string> types, ops;
  for (const NcclTestsRow& row : all_reduce.runs[0].rows) {
    types.insert(row.type);
    ops.insert(row.redop);
    EXPECT_EQ(row.root, -1);
  }
  EXPECT_EQ(types, twelve);
  EXPECT_EQ(ops, (std::set<std::string>{"sum", "prod", "max", "min", "avg", "mulsum"}));
  EXPECT_TRUE(all_reduce.runs[0].concluded);
}

TEST(NcclTestsOutput, TwoRanksUnderMpirunWithAnOpenMpiWarningFirst) {
  const NcclTestsOutput log = parse_log("h200-2026-11-25/nccltests-all_gather-canopy-np2-R0.log");
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclTestsRun& r = log.runs[0];
  EXPECT_EQ(r.first_line, 2);
  EXPECT_EQ(r.collective, "all_gather_perf");
  EXPECT_EQ(r.ranks(), 2);
  EXPECT_THAT(r.devices[1], HasSubstr("Rank  1 Group  0 Pid   5818"));
  EXPECT_THAT(r.devices[1], HasSubstr("NVIDIA H200"));
  EXPECT_EQ(r.rows.size(), 84u);  // 12 types x 7 sizes (0 B .. 64 KiB)
  const NcclTestsRow& f = r.rows.at(55);
  EXPECT_EQ(f.line, 68);
  EXPECT_EQ(f.type, "float");
  EXPECT_EQ(f.bytes, 32768u);
  EXPECT_EQ(f.count, 4096u);
  EXPECT_DOUBLE_EQ(f.out_of_place.time_us, 12.21);
  EXPECT_DOUBLE_EQ(f.out_of_place.busbw_gbps, 1.34);
  EXPECT_DOUBLE_EQ(f.in_place.busbw_gbps, 1.35);
  ASSERT_TRUE(r.avg_busbw_gbps);
  EXPECT_DOUBLE_EQ(*r.avg_busbw_gbps, 0.246238);
  EXPECT_TRUE(r.concluded);
  ASSERT_EQ(log.skipped.size(), 1u);
  EXPECT_EQ(log.skipped[0].line, 1);
  EXPECT_EQ(log.skipped[0].text, "[vm:05797] Warning: could not find environment variable \"CANOPY_LOG\"");
  EXPECT_TRUE(log.failures.empty());
}

TEST(NcclTestsOutput, NcclInvalidArgumentStopsTheRunAndIsReported) {
  const NcclTestsOutput log = parse_log("h100-2026-11-26/nccltests-reduce_scatter-real-g1.log");
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclTestsRun& r = log.runs[0];
  EXPECT_EQ(r.collective, "reduce_scatter_perf");
  EXPECT_EQ(r.rows.size(), 832u);  // 13 sizes x (10 types x 6 ops + f8e4m3's sum prod max min): avg refused
  EXPECT_EQ(r.rows.back().type, "f8e4m3");
  EXPECT_EQ(r.rows.back().redop, "min");
  EXPECT_EQ(r.rows.back().line, 842);
  EXPECT_FALSE(r.concluded);
  EXPECT_FALSE(r.out_of_bounds);
  ASSERT_EQ(log.failures.size(), 7u);
  EXPECT_EQ(log.failures[0].line, 843);
  EXPECT_EQ(log.failures[0].text,
            "vm: Test NCCL failure reduce_scatter.cu:49 'invalid argument (run with NCCL_DEBUG=WARN for details) / '");
  EXPECT_EQ(log.failures[6].line, 849);
  EXPECT_EQ(log.failures[6].text, ".. vm pid 18593: Test failure common.cu:1454");
  EXPECT_TRUE(log.skipped.empty());
}

TEST(NcclTestsOutput, CudaFailureAndMpirunBannersUnderMpirun) {
  const NcclTestsOutput log = parse_log("h100-2026-11-26/nccltests-all_reduce-canopy-np2-R1.log");
  ASSERT_EQ(log.runs.size(), 1u);
  EXPECT_EQ(log.runs[0].ranks(), 2);
  EXPECT_TRUE(log.runs[0].rows.empty());
  EXPECT_FALSE(log.runs[0].concluded);
  std::vector<int> lines;
  for (const NcclTestsNote& n : log.failures) lines.push_back(n.line);
  EXPECT_EQ(lines, (std::vector<int>{9, 10, 11, 12, 15, 18}));
  EXPECT_EQ(log.failures[0].text,
            "vm: Test CUDA failure common.cu:1569 'CUDA-capable device(s) is/are busy or unavailable'");
  EXPECT_THAT(log.failures[5].text,
              HasSubstr("mpirun detected that one or more processes exited with non-zero status"));
  // Open MPI's warning, the dashed rules, "Primary job terminated normally", "Process name:", "Exit code:".
  EXPECT_EQ(log.skipped.size(), 9u);
  EXPECT_EQ(log.skipped[0].line, 1);
}

TEST(NcclTestsOutput, SegfaultsOfTwoRanksAndATimedOutRunAreReported) {
  const NcclTestsOutput crashed = parse_log("h100-2026-11-25/nccltests-all_gather-canopy-np2-R0.log");
  ASSERT_EQ(crashed.runs.size(), 1u);
  EXPECT_TRUE(crashed.runs[0].rows.empty());
  std::vector<int> lines;
  for (const NcclTestsNote& n : crashed.failures) lines.push_back(n.line);
  EXPECT_EQ(lines, (std::vector<int>{9, 10, 13, 14, 23, 26}));
  EXPECT_EQ(crashed.failures[1].text, "[vm:28457] Signal: Segmentation fault (11)");

  // Killed by device-run's timeout inside the table: mpirun's line is skipped, the run has no rows and no footer.
  const NcclTestsOutput timed_out = parse_log("h100-2026-11-26/nccltests-all_gather-canopy-np2-R0.log");
  ASSERT_EQ(timed_out.runs.size(), 1u);
  EXPECT_TRUE(timed_out.runs[0].rows.empty());
  EXPECT_FALSE(timed_out.runs[0].concluded);
  ASSERT_EQ(timed_out.skipped.size(), 2u);
  EXPECT_EQ(timed_out.skipped[1].line, 13);
  EXPECT_EQ(timed_out.skipped[1].text, "mpirun: Forwarding signal 18 to job");
  EXPECT_TRUE(timed_out.failures.empty());
}

TEST(NcclTestsOutput, AppendedLogsAreSeveralRuns) {
  const std::string a = testing::read_file(log_path("h200-2026-11-25/nccltests-all_gather-canopy-np2-R0.log"));
  const std::string b = testing::read_file(log_path("h100-2026-11-26/nccltests-broadcast-real-g1.log"));
  const NcclTestsOutput log = parse_nccl_tests_output(a + b, "both.log");
  ASSERT_EQ(log.runs.size(), 2u);
  EXPECT_EQ(log.runs[0].collective, "all_gather_perf");
  EXPECT_EQ(log.runs[0].rows.size(), 84u);
  EXPECT_EQ(log.runs[1].collective, "broadcast_perf");
  EXPECT_EQ(log.runs[1].first_line, 103);
  EXPECT_EQ(log.runs[1].rows.size(), 156u);
  EXPECT_EQ(log.runs[1].rows[0].line, 113);
}

TEST(NcclTestsOutput, ALogCutMidRowNamesTheLine) {
  const std::string text = testing::read_file(log_path("h100-2026-11-26/nccltests-broadcast-canopy-g1.log"));
  // Cut inside line 112's in-place columns (the float 8 MiB row), as a killed process leaves its output.
  std::size_t at = 0;
  for (int line = 1; line < 112; ++line) at = text.find('\n', at) + 1;
  const std::string cut = text.substr(0, at + 95);  // up to the in-place time
  const std::string e = error_of(cut, "cut.log");
  EXPECT_THAT(e, HasSubstr("cut.log:112: error: a data row has 13 columns (size count type redop root, then time "
                           "algbw busbw #wrong out of place and again in place); this one has 10"));
  EXPECT_THAT(e, HasSubstr("8388608       2097152     float"));
  EXPECT_THAT(e, HasSubstr("a log that ended early"));

  // The same cut followed by more output (another process writing into the line) also names it.
  const std::string merged = text.substr(0, at + 95) + "vm: Test NCCL failure broadcast.cu:43\n" + text.substr(at);
  EXPECT_THAT(
      error_of(merged, "merged.log"),
      HasSubstr("merged.log:112: error: a data row has 13 columns (size count type redop root, then time algbw busbw "
                "#wrong out of place and again in place); this one has 15"));
  EXPECT_THAT(error_of(merged, "merged.log"), HasSubstr("two outputs written into one line"));
}

TEST(NcclTestsOutput, GarbledColumnsNameTheColumn) {
  const std::string text = testing::read_file(log_path("h100-2026-11-26/nccltests-all_gather-real-g1.log"));
  const auto replace_in_line = [&](int line, const std::string& from, const std::string& to) {
    std::size_t at = 0;
    for (int l = 1; l < line; ++l) at = text.find('\n', at) + 1;
    std::string t = text;
    const std::size_t p = t.find(from, at);
    t.replace(p, from.size(), to);
    return t;
  };
  EXPECT_THAT(error_of(replace_in_line(20, "int8", "12.5"), "g.log"),
              HasSubstr("g.log:20: error: type '12.5' is not a name"));
  EXPECT_THAT(error_of(replace_in_line(20, "    -1 ", "    -7 "), "g.log"),
              HasSubstr("g.log:20: error: root '-7' is not a rank or -1"));
  EXPECT_THAT(error_of(replace_in_line(11, "0.00", "-0.5"), "g.log"),
              HasSubstr("g.log:11: error: out-of-place algbw '-0.5' is not a non-negative number"));
  const std::string wrong = error_of(replace_in_line(12, "       0\n", "    2.5\n"), "g.log");
  EXPECT_THAT(wrong, HasSubstr("g.log:12: error: in-place #wrong '2.5' is neither a count nor N/A"));
  const std::string header = error_of(replace_in_line(9, "   root ", "   rank "), "g.log");
  EXPECT_THAT(header, HasSubstr("g.log:9: error: the table's columns are 'size         count      type   redop    "
                                "rank"));
}

TEST(NcclTestsOutput, NotAvailableWrongCountsAndOldStyleCounts) {
  // nccl-tests prints #wrong as N/A without its check (-c 0); older versions printed it with %5.0le (0e+00).
  std::string text = testing::read_file(log_path("h200-2026-11-25/nccltests-all_gather-canopy-np2-R1.log"));
  std::size_t at = 0;
  for (int l = 1; l < 13; ++l) at = text.find('\n', at) + 1;
  const std::size_t end = text.find('\n', at);
  std::string row = text.substr(at, end - at);
  row.replace(row.rfind("       0"), 8, "     N/A");
  row.replace(row.find("0     0."), 1, "0e+00");  // the out-of-place #wrong
  text.replace(at, end - at, row);
  const NcclTestsOutput log = parse_nccl_tests_output(text, "na.log");
  ASSERT_EQ(log.runs.at(0).rows.size(), 84u);
  EXPECT_EQ(log.runs[0].rows[0].out_of_place.wrong, 0);
  EXPECT_FALSE(log.runs[0].rows[0].in_place.wrong);
}

TEST(NcclTestsOutput, NothingButNoiseIsNoRunAndNoError) {
  const NcclTestsOutput log = parse_nccl_tests_output("\n\r\n123 not in a table\nstray text\n\x01\xff\n", "noise");
  EXPECT_TRUE(log.runs.empty());
  EXPECT_EQ(log.skipped.size(), 3u);
  EXPECT_EQ(log.skipped[0].line, 3);
}

// The timed loop's length (-n) from the parameters line: a copy of a real log with it changed, removed or garbled.
TEST(NcclTestsOutput, TimedItersComeFromTheParametersLine) {
  const std::string text = testing::read_file(log_path("h100-2026-11-26/nccltests-broadcast-real-g1.log"));
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string copy = text;
    const std::size_t at = copy.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return parse_nccl_tests_output(copy.replace(at, from.size(), to), "copy").runs.at(0).iters;
  };
  EXPECT_EQ(with(" iters: 2 agg", " iters: 200 agg"), 200);
  EXPECT_EQ(with(" iters: 2 agg iters: 1", " agg iters: 1"), std::nullopt);  // only the warm-up's and agg's left
  EXPECT_EQ(with(" iters: 2 agg", " iters: two agg"), std::nullopt);
  EXPECT_EQ(with(" iters: 2 agg", " iters: 0 agg"), std::nullopt);
}

// The timers nccl-tests combines into a row's time: one process of one thread (-g 1), two processes under mpirun
// -np 2 (two Pids, both ranks on one GPU), and a copy of that log claiming 4 threads a process or none.
TEST(NcclTestsOutput, TimersAreProcessesTimesThreads) {
  const NcclTestsRun one = parse_log("h100-2026-11-26/nccltests-broadcast-real-g1.log").runs.at(0);
  EXPECT_EQ(one.threads, 1);
  EXPECT_EQ(one.timers(), 1);
  const std::string file = "h200-2026-11-25/nccltests-all_gather-canopy-np2-R0.log";
  const NcclTestsRun two = parse_log(file).runs.at(0);
  ASSERT_EQ(two.ranks(), 2);
  EXPECT_EQ(two.threads, 1);
  EXPECT_EQ(two.timers(), 2);
  const std::string text = testing::read_file(log_path(file));
  const auto with = [&](const std::string& to) {
    std::string copy = text;
    const std::size_t at = copy.find("nThread 1 ");
    EXPECT_NE(at, std::string::npos);
    return parse_nccl_tests_output(copy.replace(at, 10, to), "copy").runs.at(0);
  };
  EXPECT_EQ(with("nThread 4 ").timers(), 8);
  EXPECT_EQ(with("nThread x ").threads, std::nullopt);
  EXPECT_EQ(with("nThread x ").timers(), 2);  // unknown threads count as one
  EXPECT_EQ(with("nThread 0 ").threads, std::nullopt);
}

}  // namespace
}  // namespace canopy
