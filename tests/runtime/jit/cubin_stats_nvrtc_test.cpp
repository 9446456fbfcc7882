// cubin_kernel_stats agrees with ptxas's verbose log (registers, stack) on every entry it reports, and survives
// bytes that are not a CUBIN (empty, truncated, randomly damaged).
#include "runtime/jit/cubin_stats.hpp"

#include <gtest/gtest.h>

#include <random>

#include "codegen/generate.hpp"
#include "codegen/template_bundle.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"

namespace canopy {
namespace {

void expect_matches_log(const SourceFile& source, const std::vector<SourceFile>& headers) {
  const CompiledModule m = compile_cuda(source, headers, CompileOptions{});
  const std::vector<KernelStats> from_log = parse_ptxas_stats(m.log);
  const std::vector<KernelStats> from_cubin = cubin_kernel_stats(m.cubin);
  ASSERT_FALSE(from_cubin.empty()) << source.name;
  for (const KernelStats& c : from_cubin) {
    bool found = false;
    for (const KernelStats& l : from_log)
      if (l.name == c.name) {
        found = true;
        EXPECT_EQ(c.registers, l.registers) << c.name;
        EXPECT_EQ(c.stack_bytes, l.stack_bytes) << c.name;
      }
    EXPECT_TRUE(found) << c.name << " is not in ptxas's log:\n" << m.log;
  }
}

TEST(CubinStats, AgreeWithPtxasOnGeneratedKernels) {
  for (Collective c : {Collective::allreduce, Collective::broadcast}) {
    const KernelSource k = generate(plan(load_topology("h200x2"), c), CodegenOptions{});
    expect_matches_log(k.file, template_headers());
  }
}

TEST(CubinStats, AgreeWithPtxasOnAKernelWithSharedMemory) {
  const SourceFile k{"k.cu",
                     "extern \"C\" __global__ void k(float* p) {\n  __shared__ float s[1024];\n"
                     "  s[threadIdx.x] = p[threadIdx.x];\n  __syncthreads();\n  p[threadIdx.x] = s[1023 - threadIdx.x];\n}\n"};
  expect_matches_log(k, {});
  const auto stats = cubin_kernel_stats(compile_cuda(k, {}, CompileOptions{}).cubin);
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].name, "k");
  EXPECT_GT(stats[0].registers, 0);
}

TEST(CubinStats, BytesThatAreNotACubinGiveNothing) {
  EXPECT_TRUE(cubin_kernel_stats("").empty());
  EXPECT_TRUE(cubin_kernel_stats("\x7f" "ELF").empty());
  const std::string cubin =
      compile_cuda({"k.cu", "extern \"C\" __global__ void k(int* p) { p[0] = 1; }\n"}, {}, CompileOptions{}).cubin;
  std::mt19937_64 rng(7);
  for (std::size_t cut : {std::size_t{64}, cubin.size() / 3, cubin.size() - 1}) (void)cubin_kernel_stats(cubin.substr(0, cut));
  for (int round = 0; round < 200; ++round) {
    std::string damaged = cubin;
    for (int flips = 0; flips < 8; ++flips) damaged[rng() % damaged.size()] = static_cast<char>(rng());
    (void)cubin_kernel_stats(damaged);  // must not crash or read out of bounds
  }
}

}  // namespace
}  // namespace canopy
