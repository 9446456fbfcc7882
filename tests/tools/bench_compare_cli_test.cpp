// `canopy bench-compare` as users run it on real canopy bench --json files (bench/results: --procs 2 on
// nvidia-h200-x2, c8af737 and 8f3cd55): the tables with their rows' ratios, --pair, exit 1 for a nonzero #wrong, runs
// with nothing in common, a missing file and one file alone; --help teaches with examples.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

testing::CommandRun canopy(const std::string& args) {
  return testing::run_command(std::string(CANOPY_CLI) + " bench-compare " + args + " 2>&1");
}

std::string results(const std::string& file) { return (testing::source_dir() / "bench/results" / file).string(); }
const std::string kBase = results("h200x2-procs2-c8af737-f32.json");
const std::string kNew = results("h200x2-procs2-8f3cd55-f32.json");

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("canopy-bc-" + std::to_string(::getpid()) + "-" + name)).string();
}

TEST(BenchCompareCli, PrintsATablePerCollectiveWithTheRowsRatios) {
  const testing::CommandRun r = canopy(kBase + " " + kNew);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# BASE " + kBase));
  EXPECT_THAT(r.output, HasSubstr("== allreduce f32 sum, 2 ranks (BASE 2 processes, NEW 2 processes)"));
  EXPECT_THAT(r.output, HasSubstr("    size    BASE us     NEW us  time x  BASE GB/s   NEW GB/s  busbw x  NCCL x"));
  // Every printed ratio is the JSON's times': allreduce of 64 MiB, the row the new defaults' 64 blocks slowed.
  double b = 0, n = 0, bn = 0, nn = 0;
  for (const auto& [file, t, nccl] : {std::tuple{kBase, &b, &bn}, std::tuple{kNew, &n, &nn}})
    for (const nlohmann::json& row : nlohmann::json::parse(testing::read_file(file)))
      if (row["collective"] == "allreduce" && row["bytes"] == (64u << 20)) {
        *t = row["time_us"].get<double>();
        *nccl = row["nccl_time_us"].get<double>();
      }
  ASSERT_GT(b * n, 0);
  EXPECT_THAT(r.output, HasSubstr(fmt::format("{:>8} {:>10.2f} {:>10.2f} {:>7.3f}", "64M", b, n, n / b)));
  EXPECT_THAT(r.output, HasSubstr(fmt::format("{:>8.3f} {:>7.3f}  0\n", b / n, nn / bn)));
  EXPECT_THAT(r.output, HasSubstr("busbw x, geometric mean:  <= 64K "));
  const testing::CommandRun pair = canopy(kBase + " " + kNew + " --pair " + kNew + " " + kBase);
  EXPECT_EQ(pair.status, 0) << pair.output;
  EXPECT_THAT(pair.output, HasSubstr("=== pair 2 of 2"));
}

TEST(BenchCompareCli, AWrongElementNothingInCommonAndBadArgumentsFail) {
  nlohmann::json rows = nlohmann::json::parse(testing::read_file(kNew));
  rows[3]["errors"] = 5;
  const std::string wrong = temp("wrong.json");
  std::ofstream(wrong) << rows.dump();
  testing::CommandRun r = canopy(kBase + " " + wrong);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("WRONG 0/5"));
  EXPECT_THAT(r.output, HasSubstr("1 size had a nonzero #wrong (marked WRONG above)"));
  std::filesystem::remove(wrong);

  r = canopy(kBase + " " + results("h200x2-procs2-c8af737-bf16.json"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("have no collective, type, operator, rank count and size in common"));
  EXPECT_THAT(r.output, HasSubstr("# allreduce bf16 sum, 2 ranks: only in NEW"));

  r = canopy(kBase + " /nonexistent/new.json");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot read '/nonexistent/new.json': give the path of the rows `canopy bench "
                                  "--json FILE` wrote"));
  r = canopy(kBase);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("one run given"));
}

TEST(BenchCompareCli, HelpTeachesWithExamples) {
  const testing::CommandRun r = canopy("--help");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("canopy bench-compare base.json blocks48.json"));
  EXPECT_THAT(r.output, HasSubstr("NCCL x ="));
}

}  // namespace
}  // namespace canopy
