// RailLayout and shard_range (runtime/hosts/rail_layout.hpp): hosts in order of their first process, local ranks,
// rails (local rank s mod n_h of every host) and shards, on even and uneven hosts; and the host identity's rule.
#include "runtime/hosts/rail_layout.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "runtime/hosts/host_identity.hpp"

namespace canopy {
namespace {

using Rails = std::vector<std::vector<int>>;

TEST(RailLayout, TwoHostsOfTwo) {
  const RailLayout l = make_rail_layout({"a", "a", "b", "b"});
  EXPECT_EQ(l.hosts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(l.host_of, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(l.local_of, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(l.k, 2);
  EXPECT_EQ(l.rails, (Rails{{0, 2}, {1, 3}}));
  EXPECT_EQ(l.rails_of, (Rails{{0}, {1}, {0}, {1}}));
  EXPECT_EQ(l.exact(1, 1), 3);
  EXPECT_EQ(describe_rail_layout(l), "host0=a(p0,p1) host1=b(p2,p3); 2 rails: 0={p0,p2} 1={p1,p3}");
}

TEST(RailLayout, UnevenHostsPutSmallHostsOnSeveralRails) {
  const RailLayout l = make_rail_layout({"a", "b", "b", "c"});
  EXPECT_EQ(l.k, 2);
  EXPECT_EQ(l.local_of, (std::vector<int>{0, 0, 1, 0}));
  EXPECT_EQ(l.rails, (Rails{{0, 1, 3}, {0, 2, 3}}));
  EXPECT_EQ(l.rails_of, (Rails{{0, 1}, {0}, {1}, {0, 1}}));
  EXPECT_EQ(l.owner(0, 1), 0);
  EXPECT_EQ(l.owner(1, 1), 2);
  EXPECT_EQ(l.exact(0, 1), -1);
  EXPECT_EQ(l.exact(1, 1), 2);
}

TEST(RailLayout, HostsInOrderOfTheirFirstProcessEvenWhenInterleaved) {
  const RailLayout l = make_rail_layout({"x", "y", "x", "x"});
  EXPECT_EQ(l.hosts, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(l.members, (Rails{{0, 2, 3}, {1}}));
  EXPECT_EQ(l.local_of, (std::vector<int>{0, 0, 1, 2}));
  EXPECT_EQ(l.k, 3);
  EXPECT_EQ(l.rails, (Rails{{0, 1}, {2, 1}, {3, 1}}));
  EXPECT_EQ(l.rails_of[1], (std::vector<int>{0, 1, 2}));
}

TEST(RailLayout, ThreeAndOne) {
  const RailLayout l = make_rail_layout({"a", "a", "a", "b"});
  EXPECT_EQ(l.k, 3);
  EXPECT_EQ(l.rails, (Rails{{0, 3}, {1, 3}, {2, 3}}));
  EXPECT_EQ(l.rails_of[3], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(l.rails_of[2], (std::vector<int>{2}));
}

TEST(RailLayout, OneHostIsOneRailPerProcessAndNoProcessesIsAnError) {
  const RailLayout l = make_rail_layout({"a", "a"});
  EXPECT_EQ(l.host_count(), 1);
  EXPECT_EQ(l.rails, (Rails{{0}, {1}}));
  EXPECT_THROW(make_rail_layout({}), Error);
}

TEST(ShardRange, SplitsEvenlyWithTheRemainderFirst) {
  for (const auto& [count, k] : std::vector<std::pair<std::uint64_t, int>>{
           {0, 2}, {1, 2}, {7, 2}, {1028, 2}, {0, 3}, {1, 3}, {7, 3}, {1028, 3}, {40000004, 3}}) {
    std::uint64_t next = 0, largest = 0, smallest = ~0ull;
    for (int s = 0; s < k; ++s) {
      const ElementRange r = shard_range(count, k, s);
      EXPECT_EQ(r.begin, next) << count << " in " << k << ", shard " << s;
      next = r.end;
      largest = std::max(largest, r.count());
      smallest = std::min(smallest, r.count());
      if (s > 0) {
        EXPECT_LE(r.count(), shard_range(count, k, s - 1).count());
      }
    }
    EXPECT_EQ(next, count);
    EXPECT_LE(largest - smallest, 1u);
  }
  EXPECT_EQ(shard_range(7, 3, 0).count(), 3u);
  EXPECT_EQ(shard_range(7, 3, 2).begin, 5u);
  EXPECT_EQ(shard_range(1, 2, 0).count(), 1u);
  EXPECT_TRUE(shard_range(1, 2, 1).empty());
  EXPECT_TRUE(shard_range(0, 2, 0).empty());
  EXPECT_EQ(shard_range(1028, 2, 1).begin, 514u);
  EXPECT_THROW(shard_range(5, 2, 2), InternalError);
}

TEST(HostIdentity, CanopyHostIdOverridesHostnameAndBootId) {
  EXPECT_EQ(host_identity_from("host1", "box", "4c1f\n"), "host1");
  EXPECT_EQ(host_identity_from("", "box", "4c1f\n"), "box:4c1f");
  EXPECT_EQ(host_identity_from(nullptr, "box", ""), "box");
  EXPECT_FALSE(host_identity().empty());
}

}  // namespace
}  // namespace canopy
