// `canopy detect` as users run it where no GPU is visible (CUDA_VISIBLE_DEVICES=-1 hides any there is): exit 1
// with a message that says so and what to do, never a crash; --help teaches with examples; bad options are errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

testing::CommandRun canopy(const std::string& args) {
  return testing::run_command("CUDA_VISIBLE_DEVICES=-1 " + std::string(CANOPY_CLI) + " " + args + " 2>&1");
}

TEST(DetectCli, WithoutAGpuExitsOneAndSaysWhy) {
  const testing::CommandRun r = canopy("detect");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("canopy: error: no CUDA device visible"));
  EXPECT_THAT(r.output, HasSubstr("or describe the machine in a .topo file instead"));
  EXPECT_THAT(r.output, Not(HasSubstr("topology detected")));
}

TEST(DetectCli, MeasureAndOutWithoutAGpuWriteNothing) {
  const std::string out =
      (std::filesystem::temp_directory_path() / ("canopy-detect-cli-test-" + std::to_string(::getpid()) + ".topo"))
          .string();
  const testing::CommandRun r = canopy("detect --measure --out " + out);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no CUDA device visible"));
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(DetectCli, HelpTeachesWithExamples) {
  const testing::CommandRun r = canopy("detect --help");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Examples:"));
  EXPECT_THAT(r.output, HasSubstr("canopy detect --measure --out mine.topo"));
  EXPECT_THAT(canopy("--help").output, HasSubstr("canopy detect --out mine.topo"));
}

TEST(DetectCli, BadOptionsAreErrorsBeforeAnyDeviceIsAsked) {
  testing::CommandRun r = canopy("detect --devices 0,x");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("--devices '0,x': 'x' is not a CUDA device ordinal"));
  r = canopy("detect --name 9lives");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("--name '9lives'"));
  r = canopy("detect --frobnicate");
  EXPECT_EQ(r.status, 2);
}

}  // namespace
}  // namespace canopy
