// scripts/build-progress, what scripts/demo shows of a build (issue 71's front door): setup's lines at once, the
// compile every 5 % of ninja's steps, and a line saying what is still running whenever the build is silent for
// CANOPY_PROGRESS_EVERY seconds, so a fresh clone's demo shows progress within seconds. Fed a build's output, timed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

testing::CommandRun progress(const std::string& feed) {
  return testing::run_command("(" + feed + ") | CANOPY_PROGRESS_EVERY=1 " CANOPY_SOURCE_DIR "/scripts/build-progress");
}

TEST(BuildProgress, SaysWhatTheBuildIsDoingWhileItIsSilent) {
  const testing::CommandRun r = progress(
      "echo 'setup: all Debian packages present'; sleep 2.5; echo '-- Configuring done (2.1s)'; "
      "for i in $(seq 1 100); do echo \"[$i/100] Building CXX object x$i.o\"; done");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("   setup: all Debian packages present\n"));
  EXPECT_THAT(r.output, HasSubstr("still configuring (CMake) (0:0")) << "a silent configure is reported";
  EXPECT_THAT(r.output, HasSubstr("configured (0:0"));
  EXPECT_THAT(r.output, HasSubstr("build 1 % (1 of 100 steps")) << "the first step shows at once";
  EXPECT_THAT(r.output, HasSubstr("build 6 % (6 of 100 steps"));
  EXPECT_THAT(r.output, Not(HasSubstr("build 2 %"))) << "then every 5 %";
  EXPECT_THAT(r.output, HasSubstr("build 100 % (100 of 100 steps"));
  EXPECT_THAT(r.output, Not(HasSubstr("Building CXX"))) << "the compiler's lines stay in the log";
}

TEST(BuildProgress, ALongStepIsReportedWithItsProgressSoFar) {
  const testing::CommandRun r =
      progress("echo '[0/2] Re-checking globbed directories...'; echo '[1/40] Building CXX object a.o'; echo '[2/40] Building CXX object b.o'; sleep 2.5; "
               "echo '[40/40] Linking CXX executable bin/canopy'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("   configured (0:00)\n   build 2 % (1 of 40 steps")) << "CMake's glob check is no step";
  EXPECT_THAT(r.output, Not(HasSubstr("0 of 2 steps")));
  EXPECT_THAT(r.output, HasSubstr("still compiling, 5 % (2 of 40 steps) (0:0"));
  EXPECT_THAT(r.output, HasSubstr("build 100 % (40 of 40 steps"));
}

}  // namespace
}  // namespace canopy
