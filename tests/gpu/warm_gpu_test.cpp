// `canopy warm` on a GPU (label gpu; SKIPPED without one): into an empty kernel cache it compiles the distinct kernels
// a job of these collectives, types and sizes meets, and a second run finds every one of them in the cache, compiling
// none; a bench of one of those sizes then loads its kernel from the disk (CANOPY_LOG=info says "disk").
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <regex>

#include <unistd.h>

#include "runtime/cuda/gpu_devices.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

TEST(WarmOnGpu, ASecondRunFindsEveryKernelInTheCache) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const std::filesystem::path cache =
      std::filesystem::temp_directory_path() / fmt::format("canopy-warm-{}", ::getpid());
  std::filesystem::remove_all(cache);
  const std::string env = fmt::format("CANOPY_CACHE_DIR={}", cache.string());
  const std::string warm = fmt::format("{} {} warm -t h200x2 --devices 0 -c allreduce,allgather --dtype f32,bf16 "
                                       "--sizes 8K,1M,64M 2>&1",
                                       env, CANOPY_CLI);
  const testing::CommandRun first = testing::run_command(warm);
  std::cout << first.output;
  ASSERT_EQ(first.status, 0) << first.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(first.output, m, std::regex("# ([0-9]+) compiled, 0 already in the cache")))
      << first.output;
  const int kernels = std::stoi(m[1]);
  EXPECT_GE(kernels, 2) << "two types at least two kernels";
  const testing::CommandRun second = testing::run_command(warm);
  std::cout << second.output;
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_THAT(second.output, ::testing::HasSubstr(fmt::format("# 0 compiled, {} already in the cache", kernels)));
  const testing::CommandRun bench = testing::run_command(
      fmt::format("{} CANOPY_LOG=info {} bench -t h200x2 --devices 0 -c allreduce --sizes 64M --iters 2 --repeats 1 "
                  "2>&1",
                  env, CANOPY_CLI));
  std::cout << bench.output;
  EXPECT_EQ(bench.status, 0) << bench.output;
  EXPECT_THAT(bench.output, ::testing::Not(::testing::ContainsRegex("allreduce f32.*compiled")));
  std::filesystem::remove_all(cache);
}

}  // namespace
}  // namespace canopy
