// `canopy bench` and `canopy tune` as users run them where no GPU is visible (CUDA_VISIBLE_DEVICES=-1): exit 1 with a message, never a
// crash; bad options are refused before any GPU is asked for; --help teaches the columns.
#include <gmock/gmock.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

testing::CommandRun canopy(const std::string& args) {
  return testing::run_command("CUDA_VISIBLE_DEVICES=-1 " + std::string(CANOPY_CLI) + " " + args + " 2>&1");
}

TEST(BenchCli, WithoutAGpuExitsOneAndSaysWhy) {
  const testing::CommandRun r = canopy("bench -t h200x2 -c allreduce --sizes 1M");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("canopy: error: no CUDA device is visible"));
  // Without a driver CUDA says "driver version is insufficient": the message says what that means.
  if (r.output.find("insufficient") != std::string::npos)
    EXPECT_THAT(r.output, HasSubstr("no NVIDIA driver was found: CUDA says \"CUDA driver version is insufficient"));
}

TEST(BenchCli, BadOptionsAreRefusedFirst) {
  EXPECT_THAT(canopy("bench --sizes 1G:1M").output, HasSubstr("--sizes '1G:1M': need 0 < MIN <= MAX"));
  EXPECT_THAT(canopy("bench --dtype f8").output,
              HasSubstr("--dtype 'f8': expected f32, f16, bf16, f64, i32, i64, u8, i8, u32, u64, f8e4m3 or f8e5m2"));
  EXPECT_THAT(canopy("bench -c allsum").output, HasSubstr("--collective 'allsum': expected broadcast"));
  EXPECT_THAT(canopy("bench --iters 0").output, HasSubstr("--iters and --repeats take at least 1"));
  EXPECT_THAT(canopy("bench --rounds -2").output,
              HasSubstr("--rounds -2: give 1 or more (5 or more to judge a ratio)"));
  EXPECT_THAT(canopy("bench --target 0").output, HasSubstr("--target 0: give a ratio above 0, e.g. 1.0"));
  EXPECT_EQ(canopy("bench --op avg").status, 1);
  EXPECT_THAT(canopy("bench -c alltoall -a ring-allreduce").output,
              HasSubstr("-c alltoall times NCCL's alltoall; -a times a program: give one of them"));
  EXPECT_THAT(canopy("bench -c alltoall,allreduce").output,
              HasSubstr("--collective 'alltoall,allreduce': alltoall runs alone (-c alltoall)"));
  EXPECT_THAT(canopy("bench -c allreduce,sendrecv").output,
              HasSubstr("--collective 'allreduce,sendrecv': sendrecv runs alone (-c sendrecv)"));
  EXPECT_THAT(canopy("bench -c gather --in-place").output, HasSubstr("--in-place: -c gather runs out of place"));
  EXPECT_THAT(canopy("bench -c scatter --graph").output,
              HasSubstr("--graph: -c scatter is a group of sends and receives, which are not captured"));
  for (const char* call : {"sendrecv", "alltoall", "gather", "scatter"}) {  // past the options: the GPU is missing
    const testing::CommandRun r = canopy(fmt::format("bench -t h200x2 -c {} --sizes 1M", call));
    EXPECT_EQ(r.status, 1) << call << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("canopy: error: no CUDA device is visible")) << call;
  }
}

TEST(BenchCli, HelpExplainsTheColumns) {
  const testing::CommandRun r = canopy("bench --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("--vs-nccl"));
  EXPECT_THAT(r.output, HasSubstr("busbw = algbw x 2(n-1)/n (allreduce)"));
}

TEST(TuneCli, WithoutAGpuExitsOneAndBadOptionsAreRefusedFirst) {
  for (const std::string tune : {"tune", "tune --protocols", "tune --vs-nccl"}) {
    const testing::CommandRun r = canopy(tune + " -t h200x2 -c allreduce --sizes 16M --dry-run");
    EXPECT_EQ(r.status, 1) << tune << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("canopy: error: no CUDA device is visible")) << tune;
    EXPECT_THAT(canopy(tune + " -c allsum").output, HasSubstr("--collective 'allsum': expected broadcast")) << tune;
    EXPECT_THAT(canopy(tune + " --sizes 0").output, HasSubstr("--sizes '0': sizes must be positive")) << tune;
    EXPECT_THAT(canopy(tune + " --repeats 0").output, HasSubstr("--iters and --repeats take at least 1")) << tune;
    EXPECT_THAT(canopy(tune + " --devices x").output,
                HasSubstr("--devices 'x': expected CUDA device numbers such as 0,1"))
        << tune;
  }
  EXPECT_THAT(canopy("tune --vs-nccl --protocols").output,
              HasSubstr("--vs-nccl and --protocols choose different things: give one"));
  EXPECT_THAT(canopy("tune --procs 2").output, HasSubstr("--procs goes with --vs-nccl"));
  EXPECT_THAT(canopy("tune --vs-nccl --rounds 0").output, HasSubstr("--rounds 0: give 1 or more"));
  // --protocols takes every collective by default; "all" is a list's only entry.
  EXPECT_THAT(canopy("tune --protocols -c all,scan").output, HasSubstr("--collective 'all': expected broadcast"));
}

// `canopy warm` where no GPU is visible: exit 1 saying so; bad options refused first; --help says what it compiles.
TEST(WarmCli, WithoutAGpuExitsOneAndBadOptionsAreRefusedFirst) {
  const testing::CommandRun r = canopy("warm -t h200x2 -c allreduce --sizes 1M");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("canopy: error: no CUDA device is visible"));
  EXPECT_THAT(canopy("warm --dtype f33").output, HasSubstr("--dtype 'f33': expected f32"));
  EXPECT_THAT(canopy("warm --dtype ,").output, HasSubstr("--dtype: give at least one element type"));
  EXPECT_THAT(canopy("warm --procs -1").output, HasSubstr("--procs -1: give the number of processes"));
  EXPECT_THAT(canopy("warm -c allsum").output, HasSubstr("--collective 'allsum': expected broadcast"));
  EXPECT_THAT(canopy("warm --sizes 0").output, HasSubstr("--sizes '0': sizes must be positive"));
  const testing::CommandRun help = canopy("warm --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.output, HasSubstr("canopy warm --procs 8"));
  EXPECT_THAT(help.output, HasSubstr("the distinct kernels are compiled at once"));
}

TEST(TuneCli, HelpSaysWhereTheChoiceGoes) {
  const testing::CommandRun r = canopy("tune --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("tuning.json"));
  EXPECT_THAT(r.output, HasSubstr("CANOPY_CHUNK overrides it"));
  EXPECT_THAT(r.output, HasSubstr("--vs-nccl times both libraries"));
  EXPECT_THAT(r.output, HasSubstr("CANOPY_TUNING=FILE"));
  EXPECT_THAT(r.output, HasSubstr("--protocols"));
  EXPECT_THAT(r.output, HasSubstr("unless\nCANOPY_LL_BYTES, CANOPY_LL128_BYTES or CANOPY_DIRECT_BYTES is set"));
}

}  // namespace
}  // namespace canopy
