// `canopy algo list|verify` as users run them: the list, a clean verification, and exit 1 with the checker's messages
// or a precise error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "dsl/algorithms/shipped_algorithms.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

testing::CommandRun canopy(const std::string& args) {
  return testing::run_command(std::string(CANOPY_CLI) + " " + args + " 2>&1");
}

TEST(AlgoCli, ListsTheShippedAlgorithms) {
  const testing::CommandRun r = canopy("algo list");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("ring-allreduce"));
  EXPECT_THAT(r.output, HasSubstr("allpairs-allgather"));
  EXPECT_THAT(r.output, HasSubstr("halving-doubling-allreduce"));
  EXPECT_THAT(r.output, HasSubstr("two-step-alltoall            alltoall for 2 hosts"));
  EXPECT_THAT(r.output, HasSubstr("alltonext                    custom (rank r's input to rank r+1's output)"));
}

TEST(AlgoCli, VerifiesAlltoallAndCustomGoalsOnTwoHosts) {
  for (const char* name : {"two-step-alltoall", "alltonext"}) {
    const testing::CommandRun r = canopy(std::string("algo verify ") + name + " --ranks 16 -t dgx1-v100-x2");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("every copy over a link of dgx1-v100-x2"));
  }
  EXPECT_THAT(canopy("algo verify two-step-alltoall --ranks 2").output,
              HasSubstr("two-step-alltoall: ok: alltoall on 2 ranks"));
  EXPECT_THAT(canopy("algo verify alltonext --ranks 8").output, HasSubstr("alltonext: ok: alltonext on 8 ranks"));
}

TEST(AlgoCli, VerifiesAgainstATopology) {
  const testing::CommandRun r = canopy("algo verify ring-allreduce --ranks 8 -t hgx-h200");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ring-allreduce: ok: allreduce on 8 ranks, 8 chunks per buffer"));
  // Buffers of different sizes say so (allgather: one chunk in, one per rank out).
  EXPECT_THAT(canopy("algo verify allpairs-allgather --ranks 4").output,
              HasSubstr("allpairs-allgather: ok: allgather on 4 ranks, 1 input and 4 output chunks per rank"));
  EXPECT_THAT(r.output, HasSubstr("every copy over a link of hgx-h200"));
}

TEST(AlgoCli, MissingLinksExitOneWithTheCheckersMessages) {
  // Four GPUs in a line: the ring's closing hop gpu3 -> gpu0 has no link.
  const auto file =
      std::filesystem::temp_directory_path() / ("canopy-algo-line-" + std::to_string(::getpid()) + ".topo");
  std::ofstream(file) << "topology line\ngpus 4\nlink gpu0 gpu1 25 nvlink2\nlink gpu1 gpu2 25 nvlink2\n"
                         "link gpu2 gpu3 25 nvlink2\n";
  const testing::CommandRun r = canopy("algo verify ring-allreduce --ranks 4 -t " + file.string());
  std::filesystem::remove(file);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("error: copy rank 3 output[0] -> rank 0 output[0]: rank 3 (gpu3) has no link to rank 0 "
                        "(gpu0) in topology line"));
  EXPECT_THAT(r.output, HasSubstr("canopy: error: ring-allreduce on 4 ranks:"));
}

TEST(AlgoCli, BadNamesAndRankCounts) {
  const testing::CommandRun unknown = canopy("algo verify tree-allreduce");
  EXPECT_EQ(unknown.status, 1);
  EXPECT_THAT(unknown.output,
              HasSubstr("no shipped algorithm 'tree-allreduce': `canopy algo list` shows ring-allreduce"));
  const testing::CommandRun odd = canopy("algo verify halving-doubling-allreduce --ranks 6");
  EXPECT_EQ(odd.status, 1);
  EXPECT_THAT(odd.output, HasSubstr("is not written for 6 ranks"));
  const testing::CommandRun fewer = canopy("algo verify ring-allreduce --ranks 9 -t h200x2");
  EXPECT_EQ(fewer.status, 1);
  EXPECT_THAT(fewer.output, HasSubstr("the program has 9 ranks but topology h200x2 has 2 GPUs"));
}

TEST(MscclCli, ExportThenImportVerifiesAndABrokenStepIsNamed) {
  const auto file = std::filesystem::temp_directory_path() / ("canopy-msccl-" + std::to_string(::getpid()) + ".xml");
  ASSERT_EQ(canopy("msccl export halving-doubling-allreduce --ranks 4 -o " + file.string()).status, 0);
  const testing::CommandRun ok = canopy("msccl import " + file.string() + " -t hgx-h200");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_THAT(ok.output, HasSubstr("ok: allreduce 'halving-doubling-allreduce' on 4 ranks"));
  // Point the first remote reduce at the wrong chunk.
  std::stringstream text;
  text << std::ifstream(file).rdbuf();
  std::string xml = text.str();
  const auto at = xml.find("type=\"rrc\" srcbuf=\"o\" srcoff=\"");
  ASSERT_NE(at, std::string::npos);
  const auto off = xml.find("dstoff=\"", at) + 8;
  xml[off] = xml[off] == '0' ? '1' : '0';
  std::ofstream(file) << xml;
  const testing::CommandRun bad = canopy("msccl import " + file.string());
  std::filesystem::remove(file);
  EXPECT_EQ(bad.status, 1) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr(file.string() + ":"));
  EXPECT_THAT(bad.output, HasSubstr("error: rank "));
  EXPECT_THAT(canopy("msccl import /nonexistent.xml").output, HasSubstr("cannot read '/nonexistent.xml'"));
}

// `canopy gen|compile --algorithm`: a program instead of trees, its schedule and source, and the mistakes.
TEST(AlgoCli, GenerateFromAProgram) {
  const testing::CommandRun sched = canopy("gen -a ring-allreduce -n 4 --schedule");
  EXPECT_EQ(sched.status, 0) << sched.output;
  EXPECT_THAT(sched.output, HasSubstr("schedule ring-allreduce on switch-4: 4 ranks on 4 devices"));
  EXPECT_THAT(sched.output, HasSubstr("36 statements fused into 24 steps"));
  EXPECT_THAT(sched.output, HasSubstr("lane 1: channel 1 on gpu0"));
  const testing::CommandRun src = canopy("gen --algorithm halving-doubling-allreduce -t hgx-h200 --print");
  EXPECT_EQ(src.status, 0) << src.output;
  EXPECT_THAT(src.output, HasSubstr("// algorithm    halving-doubling-allreduce (allreduce) over 8 ranks"));
  EXPECT_THAT(src.output, HasSubstr("extern \"C\" __global__ void"));
  // --out writes the program as MSCCL-IR beside the source; it reads back and verifies.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "canopy-algo-gen-test";
  std::filesystem::remove_all(dir);
  const testing::CommandRun out = canopy("gen -a two-step-alltoall -n 16 -t dgx1-v100-x2 --out " + dir.string());
  EXPECT_EQ(out.status, 0) << out.output;
  EXPECT_THAT(out.output, HasSubstr("program.xml and manifest.json"));
  const testing::CommandRun again = canopy("algo verify " + (dir / "program.xml").string() + " -t dgx1-v100-x2");
  EXPECT_EQ(again.status, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("alltoall on 16 ranks"));
  const testing::CommandRun regen = canopy("gen -a " + (dir / "program.xml").string() + " -t dgx1-v100-x2 --schedule");
  EXPECT_EQ(regen.status, 0) << regen.output;
  std::filesystem::remove_all(dir);
}

TEST(AlgoCli, GenerateFromAProgramRefusesWhatDoesNotFit) {
  EXPECT_THAT(canopy("gen -a ring-allreduce -n 3 -t h200x2 --print").output,
              HasSubstr("ring-allreduce runs 3 ranks but h200x2 offers 2 GPUs: pass --ranks 2 or a larger topology"));
  EXPECT_THAT(canopy("gen -a ring-allreduce -c allreduce --print").output,
              HasSubstr("--algorithm says what runs: leave out --collective, --root and --plan"));
  EXPECT_THAT(canopy("gen -t h200x2 -c allreduce -n 2 --print").output, HasSubstr("--ranks sizes an --algorithm"));
  EXPECT_THAT(canopy("gen -a halving-doubling-allreduce -n 6 --print").output, HasSubstr("is not written for 6 ranks"));
  // A line of four GPUs has no link for the ring's closing hop: the checker's message, nothing generated.
  const auto file =
      std::filesystem::temp_directory_path() / ("canopy-algo-gen-line-" + std::to_string(::getpid()) + ".topo");
  std::ofstream(file) << "topology line\ngpus 4\nlink gpu0 gpu1 25 nvlink2\nlink gpu1 gpu2 25 nvlink2\n"
                         "link gpu2 gpu3 25 nvlink2\n";
  const testing::CommandRun line = canopy("gen -a ring-allreduce -t " + file.string() + " --print");
  std::filesystem::remove(file);
  EXPECT_EQ(line.status, 1);
  EXPECT_THAT(line.output, HasSubstr("algorithm 'ring-allreduce' does not verify on line, so it is not lowered:"));
  EXPECT_THAT(line.output, HasSubstr("rank 3 (gpu3) has no link to rank 0 (gpu0) in topology line"));
  EXPECT_THAT(line.output, ::testing::Not(HasSubstr("__global__")));
  EXPECT_THAT(canopy("compile -a no-such-algorithm").output,
              HasSubstr("no shipped algorithm 'no-such-algorithm': `canopy algo list` shows ring-allreduce"));
}

// Every shipped algorithm goes through `canopy gen` and `canopy compile` (NVRTC) for 8 ranks, as a user runs them.
TEST(AlgoCli, EveryShippedAlgorithmGeneratesAndCompiles) {
  for (const algo::ShippedAlgorithm& a : algo::shipped_algorithms()) {
    const std::string name(a.name);
    const testing::CommandRun gen = canopy("gen -a " + name + " -n 8 -t hgx-h200 --print");
    EXPECT_EQ(gen.status, 0) << gen.output;
    EXPECT_THAT(gen.output, HasSubstr("// algorithm    " + name));
    const testing::CommandRun r = canopy("compile -a " + name + " -n 8 --dtype bf16");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("registers")) << name;
  }
  const testing::CommandRun two = canopy("compile -a ring-allreduce -n 2 -t h200x2");
  EXPECT_EQ(two.status, 0) << two.output;
  EXPECT_THAT(two.output, HasSubstr("canopy_algo_ringallreduce_r2_c256k_f32_sum"));
}

}  // namespace
}  // namespace canopy
