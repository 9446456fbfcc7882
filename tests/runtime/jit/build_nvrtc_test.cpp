// Builder::build: plan -> generate -> compile in one call; the second call with the same inputs is an in-process
// hit, a new Builder over the same directory a disk hit, and any changed input a new build.
#include "runtime/jit/build.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "topology/shipped_topologies.hpp"

namespace canopy {
namespace {

TEST(Builder, BuildsOnceAndThenHitsTheCaches) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("canopy-build-test-{}", ::getpid());
  std::filesystem::remove_all(dir);
  const Topology t = load_topology("h200x2");
  BuildOptions o;
  CacheOutcome outcome{};
  Builder builder{DiskCache(dir)};
  const auto first = builder.build(t, Collective::allreduce, o, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::compiled);
  EXPECT_EQ(first->plan.ranks.size(), 2u);
  EXPECT_EQ(first->source.launches.size(), 2u);
  EXPECT_FALSE(first->module->cubin.empty());
  EXPECT_EQ(builder.build(t, Collective::allreduce, o, &outcome).get(), first.get());
  EXPECT_EQ(outcome, CacheOutcome::memory_hit);
  Builder fresh{DiskCache(dir)};
  fresh.build(t, Collective::allreduce, o, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::disk_hit);
  o.codegen.dtype = DataType::bf16;
  EXPECT_NE(build_inputs_key(t, Collective::allreduce, o), first->inputs_key);
  builder.build(t, Collective::allreduce, o, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::compiled);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace canopy
