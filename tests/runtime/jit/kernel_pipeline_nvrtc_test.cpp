// The kernel pipeline through NVRTC and the one in-memory cache: a kernel built for two architectures is lowered once
// and compiled twice; a repeated request is found in the Jit without lowering; a new Jit over the same folder hits
// the disk; requests or lookups that write the same source share one entry, kept by the disk cache's key.
#include <gtest/gtest.h>

#include "codegen/lower.hpp"
#include "topology/shipped_topologies.hpp"
#include "runtime/jit/build.hpp"
#include "tests/runtime/jit/cache_test_util.hpp"

namespace canopy {
namespace {

using testing::TempDir;

TEST(KernelPipelineNvrtc, LowersOncePerKernelForEveryArchitectureAndNotAgain) {
  TempDir dir;
  testing::ScopedEnv always("CANOPY_ALWAYS_COMPILE", std::nullopt);
  const Topology h200x2 = load_topology("h200x2");
  const KernelRequest request{PlanTrees{&h200x2, Collective::allreduce, {}}, {}, {}, {}, {"sm_90", "sm_80"}};
  Jit jit{DiskCache(dir.path())};
  std::uint64_t before = lowering_count();
  const BuiltKernel first = build_kernel(request, &jit);
  EXPECT_EQ(lowering_count() - before, 1u);
  ASSERT_EQ(first.builds.size(), 2u);
  EXPECT_EQ(first.outcome, CacheOutcome::compiled);
  EXPECT_NE(first.builds[0]->cache_key, first.builds[1]->cache_key) << "one binary per architecture";
  EXPECT_EQ(first.builds[0]->source.file.text, first.builds[1]->source.file.text) << "from one source";
  EXPECT_FALSE(first.builds[1]->module->cubin.empty());

  before = lowering_count();
  const BuiltKernel again = build_kernel(request, &jit);
  EXPECT_EQ(lowering_count() - before, 0u) << "a repeat is a lookup";
  EXPECT_EQ(again.outcome, CacheOutcome::memory_hit);
  EXPECT_EQ(again.builds[0].get(), first.builds[0].get());
  EXPECT_EQ(again.builds[1].get(), first.builds[1].get());

  Jit fresh{DiskCache(dir.path())};  // as a new process would
  const BuiltKernel disk = build_kernel(request, &fresh);
  EXPECT_EQ(disk.outcome, CacheOutcome::disk_hit);
  EXPECT_EQ(disk.builds[0]->cache_key, first.builds[0]->cache_key) << "keyed as the disk cache is";
}

TEST(KernelPipelineNvrtc, InputsThatWriteOneSourceShareOneKernel) {
  TempDir dir;
  testing::ScopedEnv always("CANOPY_ALWAYS_COMPILE", std::nullopt);
  const Topology h200x2 = load_topology("h200x2");
  Jit jit{DiskCache(dir.path())};
  const KernelRequest planned{PlanTrees{&h200x2, Collective::broadcast, {}}, {}, {}, {}, {}};
  const BuiltKernel first = build_kernel(planned, &jit);
  const KernelRequest given{first.builds[0]->plan, {}, {}, {}, {}};  // the same plan, given: another lookup key
  ASSERT_NE(kernel_request_key(given), kernel_request_key(planned));
  const BuiltKernel second = build_kernel(given, &jit);
  EXPECT_EQ(second.outcome, CacheOutcome::memory_hit);
  EXPECT_EQ(second.builds[0]->module.get(), first.builds[0]->module.get());

  // Jit::get alike: two lookup keys, one source, one module.
  const SourceFile source = first.builds[0]->source.file;
  CacheOutcome outcome{};
  const auto a = jit.get("one lookup", [&] { return source; }, CompileOptions{}, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::memory_hit) << "the pipeline compiled this source already";
  const auto b = jit.get("another lookup", [&] { return source; }, CompileOptions{}, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::memory_hit);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a.get(), first.builds[0]->module.get());
}

}  // namespace
}  // namespace canopy
