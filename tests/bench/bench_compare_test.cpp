// compare_bench_rows on two real canopy bench --json runs (bench/results: `canopy bench --procs 2 --vs-nccl` on
// nvidia-h200-x2 at c8af737 and at 8f3cd55, f32): every ratio equals the one worked out here from the JSON itself, the
// bands' geometric means too; keys or sizes one run lacks are noted, a repeated size keeps the later row, a wrong
// element in either run marks its size.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "bench/harness/bench_compare.hpp"
#include "bench/harness/bench_json_reader.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

const char* const kBase = "bench/results/h200x2-procs2-c8af737-f32.json";
const char* const kNew = "bench/results/h200x2-procs2-8f3cd55-f32.json";

std::string text_of(const char* file) { return testing::read_file(testing::source_dir() / file); }
std::vector<BenchRow> rows_of(const char* file) { return read_bench_rows_json(text_of(file), file); }

// (time, nccl time) of collective `c` at `bytes` in `file`, read from the JSON directly.
std::map<std::pair<std::string, std::uint64_t>, std::pair<double, double>> times_of(const char* file) {
  std::map<std::pair<std::string, std::uint64_t>, std::pair<double, double>> out;
  for (const nlohmann::json& r : nlohmann::json::parse(text_of(file)))
    out[{r["collective"].get<std::string>(), r["bytes"].get<std::uint64_t>()}] = {r["time_us"].get<double>(),
                                                                                    r["nccl_time_us"].get<double>()};
  return out;
}

TEST(BenchCompare, RatiosOfTwoRealRunsAreTheirTimes) {
  const BenchComparison c = compare_bench_rows(rows_of(kBase), rows_of(kNew));
  ASSERT_EQ(c.tables.size(), 5u);  // the five collectives, f32, 2 ranks
  EXPECT_TRUE(c.notes.empty());
  EXPECT_EQ(c.wrong_sizes, 0);
  const auto base = times_of(kBase), newer = times_of(kNew);
  for (const BenchCompareTable& t : c.tables) {
    EXPECT_EQ(t.key.ranks, 2);
    EXPECT_EQ(t.key.dtype, DataType::f32);
    EXPECT_EQ(t.base_procs, 2);
    EXPECT_EQ(t.new_procs, 2);
    ASSERT_EQ(t.sizes.size(), 28u) << to_string(t.key);  // 8 B to 1 GiB
    EXPECT_TRUE(t.only_base.empty());
    EXPECT_TRUE(t.only_new.empty());
    double logs[3] = {0, 0, 0};
    int counts[3] = {0, 0, 0};
    for (const BenchComparedSize& s : t.sizes) {
      const auto [b, b_nccl] = base.at({t.key.collective, s.bytes});
      const auto [n, n_nccl] = newer.at({t.key.collective, s.bytes});
      ASSERT_TRUE(s.time_ratio && s.busbw_ratio && s.nccl_ratio);
      EXPECT_DOUBLE_EQ(*s.time_ratio, n / b);
      EXPECT_DOUBLE_EQ(*s.busbw_ratio, b / n);
      EXPECT_DOUBLE_EQ(*s.nccl_ratio, n_nccl / b_nccl);
      for (int band = 0; band < 3; ++band)
        if (s.bytes >= kNcclTestsBands[band].from && s.bytes <= kNcclTestsBands[band].to) {
          logs[band] += std::log(b / n);
          ++counts[band];
        }
    }
    for (int band = 0; band < 3; ++band) {
      ASSERT_TRUE(t.bands[band].out_of_place) << to_string(t.key) << " band " << band;
      EXPECT_EQ(t.bands[band].out_of_place_sizes, counts[band]);
      EXPECT_NEAR(*t.bands[band].out_of_place, std::exp(logs[band] / counts[band]), 1e-12);
    }
    EXPECT_EQ(counts[0], 14);  // 8 B .. 64 KiB
    EXPECT_EQ(counts[1], 5);   // 1 .. 16 MiB
    EXPECT_EQ(counts[2], 3);   // 256 MiB .. 1 GiB
  }
  // The allreduce of 64 MiB, which the new defaults' 64 blocks made slower (8f3cd55: 240.5 against 220.8 us).
  const std::string text = bench_comparison_text(c, kBase, kNew);
  EXPECT_THAT(text, HasSubstr("== allreduce f32 sum, 2 ranks (BASE 2 processes, NEW 2 processes)"));
  EXPECT_THAT(text, HasSubstr("== broadcast f32, 2 ranks"));
  EXPECT_THAT(text, HasSubstr("busbw x, geometric mean:  <= 64K "));
}

TEST(BenchCompare, WhatOneRunLacksIsNotedAndWrongSizesCounted) {
  std::vector<BenchRow> base = rows_of(kBase), newer = rows_of(kNew);
  // NEW without reduce-scatter and without allgather's 1 GiB; a repeated allreduce 8 B row in BASE (the later
  // counts); a wrong element in NEW's broadcast of 1 MiB.
  std::erase_if(newer, [](const BenchRow& r) {
    return r.collective == Collective::reducescatter ||
           (r.collective == Collective::allgather && r.bytes == (1ull << 30));
  });
  BenchRow again = *std::find_if(base.begin(), base.end(), [](const BenchRow& r) {
    return r.collective == Collective::allreduce && r.bytes == 8;
  });
  again.time_us *= 2;
  base.push_back(again);
  std::find_if(newer.begin(), newer.end(), [](const BenchRow& r) {
    return r.collective == Collective::broadcast && r.bytes == (1u << 20);
  })->errors = 3;

  const BenchComparison c = compare_bench_rows(base, newer);
  ASSERT_EQ(c.tables.size(), 4u);
  EXPECT_THAT(c.notes, ::testing::ElementsAre("reducescatter f32 sum, 2 ranks: only in BASE"));
  EXPECT_EQ(c.wrong_sizes, 1);
  for (const BenchCompareTable& t : c.tables) {
    if (t.key.collective == "allgather") {
      EXPECT_THAT(t.only_base, ::testing::ElementsAre(1ull << 30));
    }
    if (t.key.collective == "allreduce") {
      EXPECT_DOUBLE_EQ(t.sizes[0].base.time_us, again.time_us);
    }
  }
  const std::string text = bench_comparison_text(c, "base.json", "new.json");
  EXPECT_THAT(text, HasSubstr("  only in BASE: 1G\n"));
  EXPECT_THAT(text, HasSubstr("WRONG 0/3"));
  EXPECT_THAT(text, HasSubstr("# reducescatter f32 sum, 2 ranks: only in BASE"));
}

}  // namespace
}  // namespace canopy
