// `canopy simulate` as users run it: the table, the JSON rows of docs/simulator.md's shape, CSV, the SVG plot, link
// utilisation, and precise errors for bad options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

testing::CommandRun canopy(const std::string& args) {
  return testing::run_command(std::string(CANOPY_CLI) + " " + args + " 2>&1");
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SimulateCli, TablePredictsCanopyAndRings) {
  const testing::CommandRun r = canopy("simulate -t dgx1-v100 -g 0,1,4 -c broadcast --sizes 1M,1G");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("broadcast on dgx1-v100 (3 ranks, root gpu0)"));
  EXPECT_THAT(r.output, HasSubstr("ring(us)"));
  EXPECT_THAT(r.output, HasSubstr("      1G "));
}

TEST(SimulateCli, JsonCsvAndPlotFiles) {
  const auto dir = std::filesystem::temp_directory_path() / ("canopy-simulate-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const testing::CommandRun r =
      canopy("simulate -t h200x2 -c allreduce --sizes 64K:1M --chunk 256KiB --json " + (dir / "rows.json").string() +
             " --csv " + (dir / "rows.csv").string() + " --plot " + (dir / "busbw.svg").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tree(us)")) << "allreduce shows NCCL's double binary tree";
  const nlohmann::json rows = nlohmann::json::parse(slurp(dir / "rows.json"));
  ASSERT_EQ(rows.size(), 5u);  // 64K 128K 256K 512K 1M
  for (const char* key : {"bytes", "time_us", "algbw_GBps", "busbw_GBps", "ring_time_us", "ring_busbw_GBps", "speedup",
                          "chunk_bytes", "tree_time_us", "tree_busbw_GBps"})
    EXPECT_TRUE(rows[0].contains(key)) << key;
  EXPECT_EQ(rows[0].size(), 10u) << "exactly the row keys docs/simulator.md lists (allreduce: NCCL's tree's too)";
  EXPECT_GT(rows[4]["tree_time_us"].get<double>(), 0);
  EXPECT_EQ(rows[4]["bytes"], 1 << 20);
  EXPECT_EQ(rows[4]["chunk_bytes"], 256 << 10);
  EXPECT_GT(rows[4]["busbw_GBps"].get<double>(), rows[0]["busbw_GBps"].get<double>());
  const std::string csv = slurp(dir / "rows.csv");
  EXPECT_EQ(csv.rfind("bytes,time_us,algbw_GBps,busbw_GBps,ring_time_us,ring_"
                      "busbw_GBps,speedup,chunk_bytes\n",
                      0),
            0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6);
  const std::string svg = slurp(dir / "busbw.svg");
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_EQ(static_cast<int>(std::count(svg.begin(), svg.end(), '\n') > 20), 1);
  EXPECT_THAT(svg, HasSubstr("<polyline"));
  EXPECT_THAT(svg, HasSubstr("NCCL-style rings"));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
  std::filesystem::remove_all(dir);
}

TEST(SimulateCli, LinksShowUtilisationOverTime) {
  const testing::CommandRun r = canopy("simulate -t dgx1-v100 -c allgather --sizes 64M --links");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("link utilisation over the run"));
  EXPECT_THAT(r.output, HasSubstr("gpu0 -> gpu1"));
}

TEST(SimulateCli, LatencyFromTheTopoFileCounts) {
  const auto dir = std::filesystem::temp_directory_path() / ("canopy-simulate-lat-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* latency : {"0", "50"}) {
    std::ofstream(dir / (std::string("l") + latency + ".topo"))
        << "topology pair\ngpus 2\nlink gpu0 gpu1 100 nvlink4 latency=" << latency << "\n";
  }
  auto time_of = [&](const char* latency) {
    const testing::CommandRun r = canopy("simulate -t " + (dir / (std::string("l") + latency + ".topo")).string() +
                                         " -c broadcast --sizes 8 --json -");
    EXPECT_EQ(r.status, 0) << r.output;
    return nlohmann::json::parse(r.output)[0]["time_us"].get<double>();  // stdout holds the JSON alone
  };
  EXPECT_NEAR(time_of("50") - time_of("0"), 50, 0.01);
  std::filesystem::remove_all(dir);
}

TEST(SimulateCli, AlltoallPlannedBesideDirectRoutes) {
  testing::CommandRun r = canopy("simulate -t dgx1-v100 -g 0,1,4,5 -c alltoall --sizes 64M");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("alltoall on dgx1-v100 (4 ranks)"));
  EXPECT_THAT(r.output, HasSubstr("direct_us"));
  EXPECT_THAT(r.output, HasSubstr("kernels_us: the routes the kernels run (4 chunks a pair"));
  r = canopy("simulate -t pcie-4gpu -c alltoall --sizes 1M --json -");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"direct_time_us\""));
  EXPECT_THAT(r.output, HasSubstr("\"kernels_time_us\""));
  EXPECT_THAT(canopy("simulate -t pcie-4gpu -c alltoall --links").output, HasSubstr("not --root, --csv"));
}

// --relay (issue 69): the plan whose paths pass through other tenants' GPUs beside the plan without them. On
// dgx1-p100 {0,1}, broadcast at 256 MiB: Blink+ measured 3x over NCCL's one link; the link rates give the relayed plan
// at least 2.5x over the plan without relays, and the rows in JSON and CSV carry it.
TEST(SimulateCli, RelaysBesideThePlanWithoutThem) {
  testing::CommandRun r = canopy("simulate -t dgx1-p100 -g 0,1 -c broadcast --sizes 256M --relay --json -");
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json rows = nlohmann::json::parse(r.output);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_GE(rows[0]["relay_speedup"].get<double>(), 2.5) << r.output;
  EXPECT_GT(rows[0]["relay_busbw_GBps"].get<double>(), rows[0]["busbw_GBps"].get<double>());
  EXPECT_DOUBLE_EQ(rows[0]["relay_speedup"].get<double>(),
                   rows[0]["time_us"].get<double>() / rows[0]["relay_time_us"].get<double>());
  r = canopy("simulate -t dgx1-p100 -g 0,1 -c broadcast --sizes 1M,256M --relay");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# with relays: "));
  EXPECT_THAT(r.output, HasSubstr("through gpu2"));
  EXPECT_THAT(r.output, HasSubstr("relay_gain"));
  r = canopy("simulate -t dgx1-v100 -g 0,1 -c allreduce --sizes 64M --relay --csv -");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(",relay_time_us,relay_busbw_GBps,relay_speedup"));
  // Without relays the rows keep docs/simulator.md's keys only.
  EXPECT_THAT(canopy("simulate -t dgx1-p100 -g 0,1 -c broadcast --sizes 1M --json -").output,
              ::testing::Not(HasSubstr("relay")));
  // No GPU outside the ranks, or all-to-all (whose routes relay already): refused with the fix.
  EXPECT_THAT(canopy("simulate -t dgx1-p100 -c broadcast --sizes 1M --relay").output, HasSubstr("give --gpus a subset"));
  EXPECT_THAT(canopy("simulate -t dgx1-p100 -g 0,1 -c alltoall --relay").output, HasSubstr("--relay is for the trees"));
}

TEST(SimulateCli, BadOptionsNameTheFix) {
  EXPECT_THAT(canopy("simulate -t dgx1-v100 -c allreduce --chunk 12zz").output, HasSubstr("--chunk '12zz'"));
  EXPECT_THAT(canopy("simulate -t dgx1-v100 -c allsum").output, HasSubstr("--collective 'allsum'"));
  EXPECT_THAT(canopy("simulate -t dgx1-v100 -c allreduce --launch-us -1").output, HasSubstr("at least 0"));
  const testing::CommandRun tiny = canopy("simulate -t dgx1-v100 -c allreduce --sizes 1G --chunk 1KiB");
  EXPECT_EQ(tiny.status, 1);
  EXPECT_THAT(tiny.output, HasSubstr("use a chunk of at least"));
  EXPECT_THAT(canopy("simulate --help").output, HasSubstr("speedup = ring time / Canopy time"));
}

}  // namespace
}  // namespace canopy
