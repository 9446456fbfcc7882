// compare_nccl_tests and check_against_bench on real logs (tests/data/nccl-tests: nccl-tests 2.19.6 on one H100, the
// real NCCL 2.28.3 vs libcanopy_nccl.so) and a real canopy bench --json file (bench/results/h200x2-bench-final.json):
// every ratio is the one computed here from the parsed rows; keys and sizes one log lacks are noted; a repeated size
// takes the median row; the bench check matches by collective, type and size.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "bench/harness/bench_json_reader.hpp"
#include "bench/harness/nccl_tests_compare.hpp"
#include "core/error.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

std::string read(const std::string& file) {
  return testing::read_file(testing::source_dir() / "tests/data/nccl-tests/h100-2026-11-26" / file);
}
NcclTestsOutput parse(const std::string& file) { return parse_nccl_tests_output(read(file), file); }

const NcclTestsRow& row_of(const NcclTestsOutput& log, const std::string& type, std::uint64_t bytes) {
  for (const NcclTestsRow& r : log.runs.at(0).rows)
    if (r.type == type && r.bytes == bytes) return r;
  throw std::runtime_error("no row " + type + " " + std::to_string(bytes));
}

const NcclTestsTable& table_of(const NcclTestsComparison& c, const std::string& type) {
  for (const NcclTestsTable& t : c.tables)
    if (t.key.type == type) return t;
  throw std::runtime_error("no table " + type);
}

TEST(NcclTestsCompare, RealVsCanopyBroadcastRatiosAreTheRowsRatios) {
  const NcclTestsOutput real = parse("nccltests-broadcast-real-g1.log");
  const NcclTestsOutput canopy = parse("nccltests-broadcast-canopy-g1.log");
  const NcclTestsComparison c = compare_nccl_tests(real, canopy, "real", "canopy");
  EXPECT_TRUE(c.notes.empty()) << c.notes.front();
  ASSERT_EQ(c.tables.size(), 12u);  // one per type
  for (const NcclTestsTable& t : c.tables) {
    EXPECT_EQ(t.key.collective, "broadcast_perf");
    EXPECT_EQ(t.key.ranks, 1);
    EXPECT_EQ(t.key.redop, "none");
    EXPECT_EQ(t.key.root, 0);
    ASSERT_EQ(t.sizes.size(), 13u) << to_string(t.key);
    EXPECT_TRUE(t.only_base.empty());
    EXPECT_TRUE(t.only_new.empty());
    for (const NcclTestsComparedSize& s : t.sizes) {
      const NcclTestsRow& b = row_of(real, t.key.type, s.bytes);
      const NcclTestsRow& n = row_of(canopy, t.key.type, s.bytes);
      EXPECT_EQ(s.base_line, b.line);
      EXPECT_EQ(s.new_line, n.line);
      EXPECT_FALSE(s.wrong);
      ASSERT_TRUE(s.out_of_place.time_ratio && s.in_place.time_ratio);
      EXPECT_DOUBLE_EQ(*s.out_of_place.time_ratio, n.out_of_place.time_us / b.out_of_place.time_us);
      EXPECT_DOUBLE_EQ(*s.in_place.time_ratio, n.in_place.time_us / b.in_place.time_us);
      ASSERT_TRUE(s.out_of_place.busbw_ratio && s.in_place.busbw_ratio);
      EXPECT_DOUBLE_EQ(*s.out_of_place.busbw_ratio, b.out_of_place.time_us / n.out_of_place.time_us);
      EXPECT_DOUBLE_EQ(*s.in_place.busbw_ratio, b.in_place.time_us / n.in_place.time_us);
      // Where nccl-tests printed enough digits the printed busbw agrees (to its rounding).
      if (b.out_of_place.busbw_gbps >= 100) {
        EXPECT_NEAR(*s.out_of_place.busbw_ratio, n.out_of_place.busbw_gbps / b.out_of_place.busbw_gbps, 2e-3);
      }
    }
  }
  // float 128 MiB, out of place: 97.55 us (NCCL) vs 101.75 us (Canopy), busbw 1375.9 vs 1319.0 GB/s.
  const NcclTestsComparedSize& big = table_of(c, "float").sizes.back();
  EXPECT_EQ(big.bytes, 134217728u);
  EXPECT_DOUBLE_EQ(*big.out_of_place.time_ratio, 101.75 / 97.55);
  EXPECT_DOUBLE_EQ(*big.out_of_place.busbw_ratio, 97.55 / 101.75);
  EXPECT_NEAR(*big.out_of_place.busbw_ratio, 1319.0 / 1375.9, 1e-4);
  EXPECT_DOUBLE_EQ(*big.in_place.time_ratio, 16.81 / 0.75);
  EXPECT_DOUBLE_EQ(big.out_of_place.base.busbw_gbps, 1375.9);
  EXPECT_DOUBLE_EQ(big.out_of_place.newer.busbw_gbps, 1319.0);

  // One summary: the geometric mean of every type's busbw ratios in each band.
  ASSERT_EQ(c.summaries.size(), 1u);
  const NcclTestsSummary& s = c.summaries[0];
  EXPECT_EQ(s.collective, "broadcast_perf");
  EXPECT_EQ(s.ranks, 1);
  for (int band = 0; band < 3; ++band) {
    double logs = 0;
    int n = 0;
    for (const NcclTestsTable& t : c.tables)
      for (const NcclTestsComparedSize& z : t.sizes)
        if (z.bytes >= kNcclTestsBands[band].from && z.bytes <= kNcclTestsBands[band].to) {
          logs += std::log(*z.out_of_place.busbw_ratio);
          ++n;
        }
    EXPECT_EQ(s.bands[band].out_of_place_sizes, n);
    if (n == 0) {
      EXPECT_FALSE(s.bands[band].out_of_place);
      continue;
    }
    ASSERT_TRUE(s.bands[band].out_of_place);
    EXPECT_NEAR(*s.bands[band].out_of_place, std::exp(logs / n), 1e-12);
  }
  EXPECT_EQ(s.bands[0].out_of_place_sizes, 7 * 12);  // 8 B .. 32 KiB
  EXPECT_EQ(s.bands[1].out_of_place_sizes, 2 * 12);  // 2 MiB, 8 MiB
  EXPECT_EQ(s.bands[2].out_of_place_sizes, 0);       // the logs stop at 128 MiB
}

TEST(NcclTestsCompare, SizeZeroHasATimeRatioButNoBusbwRatio) {
  const NcclTestsComparison c = compare_nccl_tests(parse("nccltests-all_gather-real-g1.log"),
                                                   parse("nccltests-all_gather-canopy-g1.log"), "a", "b");
  ASSERT_EQ(c.tables.size(), 12u);
  const NcclTestsComparedSize& zero = table_of(c, "int8").sizes.front();
  EXPECT_EQ(zero.bytes, 0u);
  EXPECT_TRUE(zero.out_of_place.time_ratio);
  EXPECT_FALSE(zero.out_of_place.busbw_ratio);
  EXPECT_FALSE(zero.in_place.busbw_ratio);
}

TEST(NcclTestsCompare, KeysAndSizesOneLogLacksAreNoted) {
  NcclTestsOutput real = parse("nccltests-broadcast-real-g1.log");
  NcclTestsOutput canopy = parse("nccltests-broadcast-canopy-g1.log");
  std::erase_if(canopy.runs[0].rows, [](const NcclTestsRow& r) {
    return r.type == "f8e5m2" || (r.type == "float" && r.bytes == 134217728);
  });
  const NcclTestsComparison c = compare_nccl_tests(real, canopy, "BASE real.log", "NEW canopy.log");
  EXPECT_EQ(c.tables.size(), 11u);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_EQ(c.notes[0], "broadcast_perf f8e5m2 none, 1 rank, root 0: only in BASE real.log (13 sizes)");
  const NcclTestsTable& f = table_of(c, "float");
  EXPECT_EQ(f.sizes.size(), 12u);
  EXPECT_EQ(f.only_base, (std::vector<std::uint64_t>{134217728}));
  EXPECT_TRUE(f.only_new.empty());

  // Different binaries or rank counts share nothing: each key is noted, no table.
  const std::string np2 = testing::read_file(
      testing::source_dir() / "tests/data/nccl-tests/h200-2026-11-25/nccltests-all_gather-canopy-np2-R0.log");
  const NcclTestsComparison none =
      compare_nccl_tests(parse("nccltests-all_gather-real-g1.log"), parse_nccl_tests_output(np2, "np2"), "g1", "np2");
  EXPECT_TRUE(none.tables.empty());
  EXPECT_EQ(none.notes,
            (std::vector<std::string>{"all_gather_perf, 1 rank: only in g1 (12 type/op tables, 156 rows)",
                                      "all_gather_perf, 2 ranks: only in np2 (12 type/op tables, 84 rows)"}));
}

TEST(NcclTestsCompare, ARepeatedSizeTakesTheMedianRow) {
  const std::string real = read("nccltests-broadcast-real-g1.log");
  const NcclTestsOutput thrice = parse_nccl_tests_output(real + real + real, "thrice.log");
  ASSERT_EQ(thrice.runs.size(), 3u);
  const NcclTestsOutput canopy = parse("nccltests-broadcast-canopy-g1.log");
  const NcclTestsComparison c = compare_nccl_tests(thrice, canopy, "thrice", "canopy");
  ASSERT_EQ(c.tables.size(), 12u);
  EXPECT_THAT(c.notes.at(0), HasSubstr("thrice holds sizes up to 3 times; each size's row is the one of median"));
  const NcclTestsComparedSize& big = table_of(c, "float").sizes.back();
  EXPECT_DOUBLE_EQ(*big.out_of_place.time_ratio, 101.75 / 97.55);
  EXPECT_GT(big.base_line, 172);  // the second run's row: equal times keep their order, the middle one is the median
  EXPECT_LT(big.base_line, 2 * 172);
}

// Rounds appended (all_gather_perf over 2 processes on one H200 with -R 0 and with -R 1 stand in for two rounds of
// each side): each size's busbw ratio range is BASE's fastest / NEW's slowest .. BASE's slowest / NEW's fastest,
// around the medians' ratio, and a target is met only where the whole range clears it.
TEST(NcclTestsCompare, RoundsGiveEachRatioItsRangeAndATargetItsVerdict) {
  const auto log = [](const std::string& day, const std::string& file) {
    return testing::read_file(testing::source_dir() / "tests/data/nccl-tests" / day / file);
  };
  const std::string r0 = log("h200-2026-11-25", "nccltests-all_gather-canopy-np2-R0.log");
  const std::string r1 = log("h200-2026-11-25", "nccltests-all_gather-canopy-np2-R1.log");
  const NcclTestsOutput base = parse_nccl_tests_output(r0 + r1, "base"), newer = parse_nccl_tests_output(r1 + r0, "new");
  const NcclTestsComparison cmp = compare_nccl_tests(base, newer, "base", "new");
  const NcclTestsTable& t = table_of(cmp, "float");
  ASSERT_FALSE(t.sizes.empty());
  int ranged = 0;
  for (const NcclTestsComparedSize& s : t.sizes) {
    const NcclTestsRatio& r = s.out_of_place;
    if (s.bytes == 0) {
      EXPECT_FALSE(r.busbw_ratio_min) << "size 0 has no busbw";
      continue;
    }
    ASSERT_TRUE(r.busbw_ratio && r.busbw_ratio_min && r.busbw_ratio_max) << s.bytes;
    EXPECT_EQ(r.base_spread.rounds, 2);
    EXPECT_EQ(r.new_spread.rounds, 2);
    // The spreads are the parsed rows' own times.
    std::vector<double> base_us, new_us;
    for (const NcclTestsRun& run : base.runs)
      for (const NcclTestsRow& row : run.rows)
        if (row.type == "float" && row.bytes == s.bytes) base_us.push_back(row.out_of_place.time_us);
    for (const NcclTestsRun& run : newer.runs)
      for (const NcclTestsRow& row : run.rows)
        if (row.type == "float" && row.bytes == s.bytes) new_us.push_back(row.out_of_place.time_us);
    ASSERT_EQ(base_us.size(), 2u);
    ASSERT_EQ(new_us.size(), 2u);
    EXPECT_DOUBLE_EQ(*r.busbw_ratio_min, std::min(base_us[0], base_us[1]) / std::max(new_us[0], new_us[1]));
    EXPECT_DOUBLE_EQ(*r.busbw_ratio_max, std::max(base_us[0], base_us[1]) / std::min(new_us[0], new_us[1]));
    EXPECT_LE(*r.busbw_ratio_min, *r.busbw_ratio);
    EXPECT_GE(*r.busbw_ratio_max, *r.busbw_ratio);
    EXPECT_EQ(nccl_tests_verdict(r, *r.busbw_ratio_min), "met");
    EXPECT_EQ(nccl_tests_verdict(r, *r.busbw_ratio_max * 1.001), "missed");
    if (*r.busbw_ratio_max > *r.busbw_ratio_min * 1.001) {
      EXPECT_EQ(nccl_tests_verdict(r, (*r.busbw_ratio_min + *r.busbw_ratio_max) / 2), "overlaps");
      ++ranged;
    }
  }
  EXPECT_GT(ranged, 0) << "the two days' runs differ somewhere";
  // One round a side: no range, and the verdict says it stands on one round.
  const NcclTestsComparison once =
      compare_nccl_tests(parse("nccltests-all_gather-real-g1.log"), parse("nccltests-all_gather-canopy-g1.log"), "a", "c");
  const NcclTestsRatio& r = table_of(once, "float").sizes.back().out_of_place;
  EXPECT_FALSE(r.busbw_ratio_min);
  EXPECT_EQ(nccl_tests_verdict(r, 0.0), "met (one round)");
  EXPECT_EQ(nccl_tests_verdict(r, 1e9), "missed (one round)");
}

TEST(NcclTestsCompare, WithoutRankLinesTheBusbwRatioIsThePrintedOnes) {
  std::string real = read("nccltests-broadcast-real-g1.log"), canopy = read("nccltests-broadcast-canopy-g1.log");
  for (std::string* t : {&real, &canopy}) {
    const std::size_t at = t->find("#  Rank  0");
    t->erase(at, t->find('\n', at) + 1 - at);
  }
  const NcclTestsComparison c =
      compare_nccl_tests(parse_nccl_tests_output(real, "r"), parse_nccl_tests_output(canopy, "c"), "r", "c");
  const NcclTestsTable& f = table_of(c, "float");
  EXPECT_EQ(f.key.ranks, 0);
  EXPECT_DOUBLE_EQ(*f.sizes.back().out_of_place.busbw_ratio, 1319.0 / 1375.9);
  EXPECT_FALSE(f.sizes.front().out_of_place.busbw_ratio);  // 8 B: both printed 0.00
  EXPECT_THAT(to_string(f.key), HasSubstr("ranks not printed"));
}

TEST(NcclTestsCompare, ANonzeroWrongCountIsFlagged) {
  std::string canopy = read("nccltests-broadcast-canopy-g1.log");
  const std::string row = "   134217728      33554432     float    none       0   101.75  1319.0  1319.0       0";
  const std::size_t at = canopy.find(row);
  ASSERT_NE(at, std::string::npos);
  canopy.replace(at + row.size() - 1, 1, "7");
  const NcclTestsComparison c =
      compare_nccl_tests(parse("nccltests-broadcast-real-g1.log"), parse_nccl_tests_output(canopy, "c"), "r", "c");
  int wrong = 0;
  for (const NcclTestsTable& t : c.tables)
    for (const NcclTestsComparedSize& s : t.sizes) wrong += s.wrong;
  EXPECT_EQ(wrong, 1);
  EXPECT_TRUE(table_of(c, "float").sizes.back().wrong);
  EXPECT_EQ(table_of(c, "float").sizes.back().out_of_place.newer.wrong, 7);
}

TEST(NcclTestsCompare, NamesNcclTestsBinariesAsCanopyCollectives) {
  EXPECT_EQ(nccl_tests_collective("all_reduce_perf"), Collective::allreduce);
  EXPECT_EQ(nccl_tests_collective("all_gather_perf"), Collective::allgather);
  EXPECT_EQ(nccl_tests_collective("reduce_scatter_perf"), Collective::reducescatter);
  EXPECT_EQ(nccl_tests_collective("broadcast_perf"), Collective::broadcast);
  EXPECT_EQ(nccl_tests_collective("reduce_perf"), Collective::reduce);
  EXPECT_EQ(nccl_tests_collective("alltoall_perf"), std::nullopt);
  EXPECT_EQ(nccl_tests_collective("sendrecv_perf"), std::nullopt);
}

TEST(NcclTestsCompare, BenchRowsOfTheSameCollectiveTypeAndSizeStandBeside) {
  const std::string path = (testing::source_dir() / "bench/results/h200x2-bench-final.json").string();
  const std::string text = testing::read_file(path);
  const std::vector<BenchRow> bench = read_bench_rows_json(text, path);
  ASSERT_EQ(bench.size(), 140u);
  std::map<std::uint64_t, double> expected, canopy_us, nccl_us;  // broadcast f32, from the JSON itself
  for (const nlohmann::json& r : nlohmann::json::parse(text))
    if (r["collective"] == "broadcast" && r["dtype"] == "f32") {
      const std::uint64_t bytes = r["bytes"].get<std::uint64_t>();
      expected[bytes] = r["nccl_time_us"].get<double>() / r["time_us"].get<double>();
      canopy_us[bytes] = r["time_us"].get<double>();
      nccl_us[bytes] = r["nccl_time_us"].get<double>();
    }

  const NcclTestsComparison c = compare_nccl_tests(parse("nccltests-broadcast-real-g1.log"),
                                                   parse("nccltests-broadcast-canopy-g1.log"), "real", "canopy");
  const NcclTestsTable& f = table_of(c, "float");
  const std::vector<NcclTestsBenchCheck> checks = check_against_bench(f, bench, /*in_place=*/false);
  ASSERT_EQ(checks.size(), 13u);  // every nccl-tests size from 8 B to 128 MiB is a power of two the bench ran
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const NcclTestsBenchCheck& k = checks[i];
    EXPECT_EQ(k.bytes, f.sizes[i].bytes);
    EXPECT_DOUBLE_EQ(k.nccl_tests_ratio, *f.sizes[i].out_of_place.busbw_ratio);
    EXPECT_DOUBLE_EQ(k.bench_ratio, expected.at(k.bytes));
    EXPECT_EQ(k.within, std::abs(k.nccl_tests_ratio / k.bench_ratio - 1) <= 0.05);
    // Where the difference comes from: each log's time over the bench's, and their quotient is the difference.
    EXPECT_DOUBLE_EQ(k.new_over_bench, f.sizes[i].out_of_place.newer.time_us / canopy_us.at(k.bytes));
    EXPECT_DOUBLE_EQ(k.base_over_bench, f.sizes[i].out_of_place.base.time_us / nccl_us.at(k.bytes));
    EXPECT_NEAR(k.base_over_bench / k.new_over_bench, k.nccl_tests_ratio / k.bench_ratio, 1e-9);
    EXPECT_EQ(k.bench_ranks, 2);  // the bench ran 2 ranks; none of 1, so those stand in (the CLI says so)
    EXPECT_EQ(k.bench_device, "NVIDIA H200 x2");
  }
  const std::vector<NcclTestsBenchCheck> in_place = check_against_bench(f, bench, /*in_place=*/true);
  ASSERT_EQ(in_place.size(), 13u);
  EXPECT_DOUBLE_EQ(in_place.back().nccl_tests_ratio, *f.sizes.back().in_place.busbw_ratio);
  EXPECT_DOUBLE_EQ(in_place.back().new_over_bench,
                   f.sizes.back().in_place.newer.time_us / canopy_us.at(f.sizes.back().bytes));
  // A wide enough tolerance agrees at every size.
  for (const NcclTestsBenchCheck& k : check_against_bench(f, bench, false, 1e9)) EXPECT_TRUE(k.within);

  // int8 has no bench row (the bench ran f32 only), nor has a type nccl-tests alone names.
  EXPECT_TRUE(check_against_bench(table_of(c, "int8"), bench, false).empty());
}

TEST(NcclTestsCompare, BenchJsonErrorsNameTheRowAndField) {
  const auto error_of = [](const std::string& text) {
    try {
      read_bench_rows_json(text, "b.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_THAT(error_of("{"), HasSubstr("b.json: error: not JSON"));
  EXPECT_THAT(error_of("{}"), HasSubstr("b.json: error: canopy bench --json writes a list of rows; this file holds a "
                                        "JSON object"));
  EXPECT_THAT(error_of(R"([{"collective":"allreduce"}])"), HasSubstr("b.json: error: row 0 has no \"dtype\""));
  // alltoall is a call of its own (canopy bench -c alltoall) since the point-to-point bench; an unknown name is not.
  EXPECT_THAT(error_of(R"([{"collective":"allsum","dtype":"f32","op":"sum"}])"),
              HasSubstr("row 0: collective \"allsum\" is none of"));
}

// Loops of unlike lengths: nccl-tests runs of BASE and NEW with different -n are flagged, and the bench rows' --iters
// reach the check (a copy of a real log with its -n changed; the bench's rows as canopy bench --json writes them).
TEST(NcclTestsCompare, LoopsOfUnlikeLengthsAreNamed) {
  std::string longer = read("nccltests-broadcast-canopy-g1.log");
  longer.replace(longer.find(" iters: 2 agg"), 13, " iters: 20 agg");
  const NcclTestsComparison c = compare_nccl_tests(parse("nccltests-broadcast-real-g1.log"),
                                                   parse_nccl_tests_output(longer, "n20"), "real", "n20");
  const NcclTestsTable& f = table_of(c, "float");
  EXPECT_EQ(f.base_iters, 2);
  EXPECT_EQ(f.new_iters, 20);
  EXPECT_THAT(c.notes, ::testing::Contains(HasSubstr(
                           "broadcast_perf float none, 1 rank, root 0: real timed 2 calls a loop (-n 2), n20 20")));
  const NcclTestsComparison same = compare_nccl_tests(parse("nccltests-broadcast-real-g1.log"),
                                                      parse("nccltests-broadcast-canopy-g1.log"), "real", "canopy");
  for (const std::string& note : same.notes) EXPECT_THAT(note, ::testing::Not(HasSubstr("calls a loop"))) << note;

  BenchRow row;
  row.collective = Collective::broadcast;
  row.dtype = DataType::f32;
  row.bytes = 2 << 20;  // a size of the log (8 B to 128 MiB, factor 4)
  row.ranks = 1;
  row.iters = 20;
  row.time_us = 10;
  row.nccl_time_us = 12;
  row.nccl_busbw_gbps = 1;
  std::vector<BenchRow> bench = read_bench_rows_json(bench_rows_json({row}), "b.json");
  ASSERT_EQ(bench.size(), 1u);
  EXPECT_EQ(bench[0].iters, 20);  // written and read back
  std::vector<NcclTestsBenchCheck> checks = check_against_bench(f, bench, false);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].bench_iters, 20);
  bench.push_back(bench[0]);
  bench.back().iters = 200;  // the same size at two loop lengths: none to name
  checks = check_against_bench(f, bench, false);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].bench_iters, 0);
  // JSON from before the field: 0, not recorded.
  EXPECT_EQ(read_bench_rows_json(R"([{"collective":"broadcast","dtype":"f32","op":"sum","bytes":8,"ranks":2,)"
                                 R"("time_us":1,"algbw_GBps":0,"busbw_GBps":0,"errors":0,"nccl_time_us":null,)"
                                 R"("nccl_busbw_GBps":null}])",
                                 "old.json")
                .at(0)
                .iters,
            0);
}

}  // namespace
}  // namespace canopy
