// `canopy run`: every rank's variables, the bootstrap id working across the processes it starts, the first failing
// status, the other ranks stopped when one fails, signals forwarded, and usage errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

testing::CommandRun canopy_run(const std::string& args) {
  return testing::run_command(std::string(CANOPY_CLI) + " run " + args + " 2>&1");
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

TEST(RunCli, EveryRankGetsItsVariables) {
  const auto r = canopy_run(
      "-n 3 -- sh -c 'echo $CANOPY_RANK/$CANOPY_NRANKS $RANK/$WORLD_SIZE $LOCAL_RANK/$LOCAL_WORLD_SIZE "
      "$CANOPY_LOCAL_RANK/$CANOPY_LOCAL_SIZE ${#CANOPY_UNIQUE_ID}'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(sorted_lines(r.output),
              ElementsAre("0/3 0/3 0/3 0/3 256", "1/3 1/3 1/3 1/3 256", "2/3 2/3 2/3 2/3 256"));
}

TEST(RunCli, HostsGiveEachRankItsHostAndLocalRanksWithinIt) {
  const auto r = canopy_run(
      "-n 4 --hosts 1,2,1 -- sh -c 'echo $CANOPY_RANK $CANOPY_HOST_ID $NCCL_HOSTID $LOCAL_RANK/$LOCAL_WORLD_SIZE "
      "$CANOPY_LOCAL_RANK/$CANOPY_LOCAL_SIZE $WORLD_SIZE'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(sorted_lines(r.output), ElementsAre("0 host0 host0 0/1 0/1 4", "1 host1 host1 0/2 0/2 4",
                                                  "2 host1 host1 1/2 1/2 4", "3 host2 host2 0/1 0/1 4"));
}

TEST(RunCli, HostsThatDoNotAddUpToTheRanksAreRefused) {
  const auto r = canopy_run("-n 4 --hosts 2,1 -- true");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--hosts 2,1 makes 3 processes but -n is 4"));
  const auto bad = canopy_run("-n 2 --hosts 2,x -- true");
  EXPECT_NE(bad.status, 0) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("'x' is not a number of processes"));
}

TEST(RunCli, TheRanksFormABootstrapGroupThroughTheLaunchersRoot) {
  const auto r = canopy_run(std::string("-n 4 -- sh -c 'exec ") + CANOPY_BOOTSTRAP_RANK +
                            " $CANOPY_NRANKS $CANOPY_RANK'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("welcome: hello 0,hello 1,hello 2,hello 3"));
}

TEST(RunCli, ExitsWithTheFirstFailingRanksStatus) {
  const auto r = canopy_run("-n 3 -- sh -c 'if [ $CANOPY_RANK = 1 ]; then exit 7; fi'");
  EXPECT_EQ(r.status, 7) << r.output;
  EXPECT_THAT(r.output, HasSubstr("canopy run: rank 1 (pid "));
  EXPECT_THAT(r.output, HasSubstr("exited with status 7"));
}

TEST(RunCli, AFailingRankStopsTheOthers) {
  // Rank 1 would run for a minute; rank 0's failure ends it (SIGTERM) long before.
  const auto r = canopy_run("-n 2 -- sh -c 'if [ $CANOPY_RANK = 0 ]; then exit 3; fi; exec sleep 60'");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("stopping the other 1 rank"));
}

TEST(RunCli, KeepGoingLetsTheOtherRanksEndByThemselves) {
  // Rank 0 fails at once; rank 1 finishes its work 0.3 s later and says so: nobody stopped it.
  const auto r = canopy_run(
      "-n 2 --keep-going -- sh -c 'if [ $CANOPY_RANK = 0 ]; then exit 3; fi; sleep 0.3; echo rank 1 finished'");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("rank 1 finished"));
  EXPECT_THAT(r.output, HasSubstr("the other 1 rank go on (--keep-going)"));
}

TEST(RunCli, ARankThatIgnoresSigtermIsKilledAfterTheGracePeriod) {
  const auto r = canopy_run(
      "-n 2 --grace 0.2 -- sh -c 'if [ $CANOPY_RANK = 0 ]; then exit 4; fi; trap \"\" TERM; while :; do sleep 0.05; "
      "done'");
  EXPECT_EQ(r.status, 4) << r.output;
}

TEST(RunCli, SignalsReachEveryRank) {
  // Each rank says it is ready through a FIFO; then the launcher gets SIGTERM, which every rank must receive.
  const std::string script =
      "dir=$(mktemp -d) && mkfifo $dir/ready; exec 3<>$dir/ready; " + std::string(CANOPY_CLI) +
      " run -n 2 -- sh -c 'trap \"echo term $CANOPY_RANK; exit 5\" TERM; echo ready >" +
      "'$dir'/ready; while :; do sleep 0.05; done' & pid=$!; read a <&3; read b <&3; kill -TERM $pid; wait $pid; "
      "echo status $?; rm -rf $dir";
  const auto r = testing::run_command("sh -c \"" + [&] {
    std::string escaped;
    for (char c : script) {
      if (c == '"' || c == '$' || c == '\\' || c == '`') escaped += '\\';
      escaped += c;
    }
    return escaped;
  }() + "\" 2>&1");
  EXPECT_THAT(r.output, HasSubstr("term 0"));
  EXPECT_THAT(r.output, HasSubstr("term 1"));
  EXPECT_THAT(r.output, HasSubstr("status 5"));
}

TEST(RunCli, UsageErrorsAreExplained) {
  auto r = canopy_run("-n 0 -- true");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("-n 0: give the number of ranks"));
  r = canopy_run("-- true");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("--nranks is required"));
  r = canopy_run("-n 2 -- /no/such/program");
  EXPECT_EQ(r.status, 127);
  EXPECT_THAT(r.output, HasSubstr("cannot start '/no/such/program' for rank 0"));
}

}  // namespace
}  // namespace canopy
