// The `canopy` command as users run it: exit codes, messages on stderr, and the output of each topo subcommand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <regex>
#include <sstream>

#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using CliRun = testing::CommandRun;

CliRun canopy(const std::string& args) { return testing::run_command(std::string(CANOPY_CLI) + " " + args + " 2>&1"); }

// The same with one environment variable set (NAME=VALUE) for the command alone.
CliRun canopy_with(const std::string& variable, const std::string& args) {
  return testing::run_command("env " + variable + " " + std::string(CANOPY_CLI) + " " + args + " 2>&1");
}

std::string src(const std::string& relative) { return (testing::source_dir() / relative).string(); }

TEST(Cli, HelpTeachesWithExamples) {
  const CliRun r = canopy("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("canopy topo show dgx1-v100"));
  for (const char* sub : {"topo --help", "topo list --help", "topo show --help", "topo check --help", "topo dot --help"}) {
    const CliRun s = canopy(sub);
    EXPECT_EQ(s.status, 0) << sub;
    EXPECT_THAT(s.output, HasSubstr("Example")) << sub;
  }
}

TEST(Cli, NoSubcommandIsAUsageError) {
  const CliRun r = canopy("");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("subcommand"));
}

TEST(Cli, TopoListNamesEveryShippedTopology) {
  const CliRun r = canopy("topo list");
  EXPECT_EQ(r.status, 0);
  for (const char* name : {"dgx1-p100", "dgx1-v100", "dgx1-v100-x2", "dgx2", "h200x2", "hgx-h100", "hgx-h200",
                           "pcie-4gpu"})
    EXPECT_THAT(r.output, HasSubstr(name));
  EXPECT_THAT(r.output, HasSubstr("DGX-1 with 8 Tesla V100"));
}

TEST(Cli, TopoShowPrintsTheTableAndSubsets) {
  CliRun r = canopy("topo show dgx1-v100");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("topology dgx1-v100: 8 GPUs, 6 switches, 29 links"));
  EXPECT_THAT(r.output, HasSubstr("gpu0 <-> gpu3"));
  r = canopy("topo show dgx1-v100 --gpus gpu0,gpu1,gpu5");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("3 GPUs"));
  r = canopy("topo show dgx1-v100 --gpus 0,1 --topo");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("topology dgx1-v100\ngpus 2\n"));
}

TEST(Cli, TopoCheckAcceptsGoodFilesAndExplainsBadOnes) {
  CliRun r = canopy("topo check " + src("topologies/dgx1-p100.topo") + " hgx-h200");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ok: topology dgx1-p100 with 8 GPUs"));
  r = canopy("topo check " + src("tests/errors/topo/unknown-node.topo"));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("unknown-node.topo:3:11: error: unknown node 'gpu2'"));
  EXPECT_THAT(r.output, HasSubstr("canopy: error: 1 of 1 topology failed the check"));
}

TEST(Cli, UnknownTopologyAndBadGpusAreErrorsNotCrashes) {
  CliRun r = canopy("topo show dgx9");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("canopy: error: unknown topology 'dgx9'"));
  r = canopy("topo show dgx1-v100 --gpus 0,9");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("index 9 is out of range"));
  r = canopy("topo show " + src("tests/errors/topo"));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("not a regular file"));
}

TEST(Cli, TopoDotWritesDotAndRendersSvg) {
  CliRun r = canopy("topo dot pcie-4gpu");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("digraph \"pcie-4gpu\""));
  if (std::system("command -v dot >/dev/null 2>&1") != 0) GTEST_SKIP() << "Graphviz `dot` is not installed";
  const auto svg = std::filesystem::temp_directory_path() / "canopy-cli-test.svg";
  std::filesystem::remove(svg);
  r = canopy("topo dot dgx1-v100 --gpus 0,1,2,5 --svg " + svg.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(testing::read_file(svg), HasSubstr("<svg"));
  r = canopy("topo dot dgx1-v100 --svg /no/such/dir/x.svg");
  EXPECT_EQ(r.status, 1);
}

}  // namespace
}  // namespace canopy

namespace canopy {
namespace {

// The summary a newcomer reads: a legend for the figures, the 12 busiest links, --links for every one.
TEST(CliPlan, ListsTheBusiestLinksWithALegendAndEveryLinkOnRequest) {
  const CliRun r = canopy("plan -t dgx1-v100 -c allreduce");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("(algbw: bytes a rank sends / time; busbw: algbw x the collective's factor"));
  EXPECT_THAT(r.output, HasSubstr("bound: the max-flow limit no plan can beat"));
  EXPECT_THAT(r.output, HasSubstr("  ... the busiest 12 of 58 links; --links lists every one\n  0 of 58 links carry "
                                  "nothing"));
  auto link_rows = [](const std::string& out) {  // lines "  gpu0 -> gpu1      25.00 of     25.00   100.0 %  ###"
    const std::regex row(R"(^  \S+ -> \S+ +[0-9.]+ of +[0-9.]+ +[0-9.]+ %.*)");
    std::istringstream lines(out);
    int rows = 0;
    for (std::string line; std::getline(lines, line);) rows += std::regex_match(line, row) ? 1 : 0;
    return rows;
  };
  EXPECT_EQ(link_rows(r.output), 12);
  const CliRun all = canopy("plan -t dgx1-v100 -c allreduce --links");
  EXPECT_EQ(link_rows(all.output), 58);
  EXPECT_THAT(all.output, Not(HasSubstr("--links lists every one")));
  // A topology with few links lists them all without the note.
  EXPECT_THAT(canopy("plan -t h200x2 -c allreduce").output, Not(HasSubstr("the busiest")));
}

TEST(CliPlan, PrintsSummaryJsonAndPictures) {
  CliRun r = canopy("plan -t dgx1-v100 -c allreduce --links");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the plan reaches 100.00 %"));
  EXPECT_THAT(r.output, HasSubstr("NCCL-style rings: 6 rings of 25.00 GB/s"));
  EXPECT_THAT(r.output, HasSubstr("gpu0 -> plx0"));
  r = canopy("plan -t dgx1-v100 -c broadcast --gpus 0,1,5 --root gpu5 --json");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"root\": \"gpu5\""));
  r = canopy("plan -t pcie-4gpu -c reducescatter --trees");
  EXPECT_THAT(r.output, HasSubstr("tree 0"));
  if (std::system("command -v dot >/dev/null 2>&1") != 0) GTEST_SKIP() << "Graphviz `dot` is not installed";
  const auto svg = std::filesystem::temp_directory_path() / "canopy-plan-test.svg";
  r = canopy("plan -t dgx2 -c broadcast --svg " + svg.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(testing::read_file(svg), HasSubstr("<svg"));
}

TEST(CliPlan, AlltoallPrintsRateBoundDirectAndPaths) {
  CliRun r = canopy("plan -t dgx1-v100 -c alltoall --gpus 0,1,4,5");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("alltoall on dgx1-v100, 4 ranks: gpu0,gpu1,gpu4,gpu5"));
  EXPECT_THAT(r.output, HasSubstr("the plan reaches 100.000 %"));
  EXPECT_THAT(r.output, HasSubstr("planned is 2.59x"));
  EXPECT_THAT(r.output, HasSubstr("planning "));
  r = canopy("plan -t pcie-4gpu -c alltoall --json");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"pair_GBps\": 10.5"));
  EXPECT_THAT(r.output, HasSubstr("\"paths\": ["));
  r = canopy("plan -t pcie-4gpu -c alltoall --svg x.svg");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("alltoall plans have paths"));
  r = canopy("plan -t pcie-4gpu -c alltoall --gpus 2");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("at least 2 GPUs"));
}

TEST(CliPlan, ExplainsMistakes) {
  CliRun r = canopy("plan -t dgx1-v100 -c gather");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("--collective 'gather': expected broadcast, reduce"));
  r = canopy("plan -t dgx1-v100 -c allgather --root gpu1");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("--root applies to broadcast and reduce only"));
  r = canopy("plan -t dgx1-v100 -c broadcast --gpus 0,1 --root gpu7");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("--root gpu7 is not one of the ranks"));
  r = canopy("plan -c broadcast");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("--topology is required"));
}

}  // namespace
}  // namespace canopy

namespace canopy {
namespace {

TEST(CliGen, WritesSourcePlanAndManifestAndExplainsBadOptions) {
  const std::filesystem::path out = std::filesystem::temp_directory_path() / "canopy-cli-gen-test";
  std::filesystem::remove_all(out);
  const CliRun r = canopy("gen -t h200x2 -c allreduce --out " + out.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(out / "canopy_allreduce_h200x2_t4_c256k_f32_sum.cu"));
  EXPECT_TRUE(std::filesystem::exists(out / "plan.json"));
  EXPECT_THAT(testing::read_file(out / "manifest.json"), HasSubstr("\"launches\""));
  std::filesystem::remove_all(out);
  EXPECT_THAT(canopy("gen --help").output, HasSubstr("canopy gen -t dgx1-v100 -c allreduce --print"));
  EXPECT_THAT(canopy("compile --help").output, HasSubstr("CANOPY_ALWAYS_COMPILE=1"));
  const CliRun bad = canopy("gen -t h200x2 -c allreduce --dtype f99 --print");
  EXPECT_EQ(bad.status, 1);
  EXPECT_THAT(bad.output, HasSubstr("--dtype 'f99': expected f32"));
  EXPECT_THAT(canopy("gen -t h200x2 -c allreduce --chunk 1000 --print").output, HasSubstr("multiple of 16 bytes"));
  EXPECT_THAT(canopy("gen -t h200x2 -c allreduce").output, HasSubstr("--out DIR, --print or --schedule"));
  EXPECT_THAT(canopy("gen -t h200x2 -c allreduce --schedule").output, HasSubstr("per chunk i"));
}

// --relay (Blink+): the plan with other GPUs forwarding, their relay lanes in the schedule, their rings in the
// manifest and in `canopy plan --relay`, all within CANOPY_RELAY_MEMORY; compile builds it (NVRTC, no GPU needed).
TEST(CliGen, RelayGeneratesTheForwardingGpusLanes) {
  const CliRun schedule = canopy("gen -t dgx1-p100 --gpus gpu0,gpu1 -c reduce --relay --schedule");
  EXPECT_EQ(schedule.status, 0) << schedule.output;
  EXPECT_THAT(schedule.output, HasSubstr("relays (forward only: no user buffer)"));
  EXPECT_THAT(schedule.output, HasSubstr("tree 1 on gpu2, relay, parent gpu0, children gpu1"));
  EXPECT_THAT(schedule.output, HasSubstr("copy    gpu2.fifo@0+l*1048576 -> gpu0.fifo@0+l*1048576"));
  const std::filesystem::path out = std::filesystem::temp_directory_path() / "canopy-cli-gen-relay-test";
  std::filesystem::remove_all(out);
  const CliRun r = canopy("gen -t dgx1-p100 --gpus gpu0,gpu1 -c broadcast --relay --out " + out.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(out / "canopy_broadcast_dgx1p100_t5_c256k_f32_relays4.cu"));
  const std::string manifest = testing::read_file(out / "manifest.json");
  EXPECT_THAT(manifest, HasSubstr("\"relay\": \"gpu2\""));
  EXPECT_THAT(manifest, HasSubstr("\"scratch_bytes\": 5242880"));
  // The plan file (with its relayed paths) generates the same kernel without --relay.
  const CliRun again = canopy("gen --plan " + (out / "plan.json").string() + " --print");
  EXPECT_EQ(again.status, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("// relays       gpu2@dev2 gpu3@dev3 gpu4@dev4 gpu5@dev5"));
  std::filesystem::remove_all(out);
  const CliRun capped =
      canopy_with("CANOPY_RELAY_MEMORY=2MiB", "plan -t dgx1-v100 --gpus gpu0,gpu1 -c allreduce --relay");
  EXPECT_EQ(capped.status, 0) << capped.output;
  EXPECT_THAT(capped.output, HasSubstr("6 GPUs forward (no user buffer, no reduction); their rings at chunk 64 KiB, "
                                       "2 slots, 24 blocks a rank (cap CANOPY_RELAY_MEMORY=2 MiB each)"));
  // --relays: only the GPUs given forward (a tenant's borrowed ones), in plan, simulate and gen alike.
  const CliRun two = canopy("plan -t dgx1-p100 --gpus 0,1 -c broadcast --relays 2,3");
  EXPECT_EQ(two.status, 0) << two.output;
  EXPECT_THAT(two.output, HasSubstr("predicted algbw 75.75 GB/s"));
  EXPECT_THAT(two.output, HasSubstr("relays    2 GPUs forward"));
  EXPECT_THAT(canopy("simulate -t dgx1-p100 -g 0,1 -c broadcast --sizes 256M --relays 2,3").output,
              HasSubstr("through gpu2, gpu3;"));
  EXPECT_THAT(canopy("gen -t dgx1-p100 --gpus 0,1 -c broadcast --relays 2 --print").output,
              HasSubstr("// relays       gpu2@dev2 "));
  EXPECT_THAT(canopy("plan -t dgx1-p100 --gpus 0,1 -c broadcast --relays 1").output,
              HasSubstr("relay GPU gpu1 is also a rank"));
  EXPECT_THAT(canopy("gen --plan x.json --relays 2 --print").output, HasSubstr("--relay and --relays plan here"));
  EXPECT_THAT(canopy("bench -t dgx1-p100 -g 0,1 --relays 2 --procs 2").output,
              HasSubstr("--relays runs in one process (relay agents are not built): leave out --procs"));
  // Each relay's link load at the predicted rate: Blink+'s own case has four relays each carrying a 20 GB/s link.
  EXPECT_THAT(canopy("plan -t dgx1-p100 --gpus gpu0,gpu1 -c broadcast --relay").output,
              HasSubstr("gpu2          5 MiB  1 ring (one per tree edge it forwards); in 20.00 GB/s, out 20.00, busiest "
                        "link 100 % full"));
  EXPECT_THAT(canopy_with("CANOPY_RELAY_MEMORY=10", "plan -t dgx1-p100 --gpus gpu0,gpu1 -c broadcast --relay").output,
              HasSubstr("CANOPY_RELAY_MEMORY=10: give each relay GPU at least 1 MiB"));
  EXPECT_THAT(canopy("gen --plan x.json --relay --print").output, HasSubstr("--relay and --relays plan here"));
  const CliRun compiled = canopy("compile -t dgx1-p100 --gpus gpu0,gpu1 -c allgather --relay --dtype bf16");
  EXPECT_EQ(compiled.status, 0) << compiled.output;
  // compile's figures come with their legend
  EXPECT_THAT(compiled.output, HasSubstr("spill stores/loads: bytes a thread moves to and from local memory"));
}

// --own-buffers: the kernels a multi-process communicator runs under CANOPY_OWN_BUFFERS=1, for inspection.
TEST(CliGen, OwnBuffersRouteBroadcastEdgesThroughTheChildsFifo) {
  const CliRun r = canopy("gen -t h200x2 -c broadcast --own-buffers --schedule");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("gpu0.send -> gpu1.fifo@0"));
  EXPECT_THAT(r.output, HasSubstr("chunk i from my FIFO into my receive buffer"));
  const CliRun pulled = canopy("gen -t h200x2 -c broadcast --own-buffers --pull all --schedule");
  EXPECT_EQ(pulled.status, 1);
  EXPECT_THAT(pulled.output, HasSubstr("--own-buffers with --pull all"));
  EXPECT_THAT(canopy("gen -a ring_allreduce -n 2 --own-buffers --print").output,
              HasSubstr("--own-buffers applies to planned trees"));
}

}  // namespace
}  // namespace canopy
