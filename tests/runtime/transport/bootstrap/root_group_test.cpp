// The bootstrap root's rules without sockets: which HELLOs fail the group and with which words, when the group has
// formed, allgather rounds, leaving, and the timeout messages.
#include <gmock/gmock.h>

#include "runtime/transport/bootstrap/root_group.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

Hello hello(std::uint32_t nranks, std::uint32_t rank, std::string version = "1.0") {
  Hello h;
  h.nranks = nranks;
  h.rank = rank;
  h.version = std::move(version);
  h.payload = "p" + std::to_string(rank);
  return h;
}

TEST(BootstrapRootGroup, FormsOnceEveryRankJoinedAndWelcomesInRankOrder) {
  RootGroup g("120 s");
  ASSERT_TRUE(g.join(10, "h:1", hello(3, 2)).ok());
  ASSERT_TRUE(g.join(11, "h:2", hello(3, 0)).ok());
  EXPECT_FALSE(g.formed());
  EXPECT_EQ(g.join_timeout_message(), "rank 1 of 3 did not join within 120 s (CANOPY_BOOTSTRAP_TIMEOUT_S)");
  ASSERT_TRUE(g.join(12, "h:3", hello(3, 1)).ok());
  EXPECT_TRUE(g.formed());
  EXPECT_EQ(g.welcome().payloads, (std::vector<std::string>{"p0", "p1", "p2"}));
  EXPECT_EQ(g.rank_of(10), 2);
  EXPECT_FALSE(g.rank_of(99));
}

TEST(BootstrapRootGroup, TimeoutMessageListsTheMissingRanks) {
  RootGroup g("120 s");
  EXPECT_EQ(g.join_timeout_message(), "no rank joined within 120 s (CANOPY_BOOTSTRAP_TIMEOUT_S)");
  ASSERT_TRUE(g.join(1, "h:1", hello(4, 0)).ok());
  ASSERT_TRUE(g.join(2, "h:2", hello(4, 1)).ok());
  EXPECT_EQ(g.join_timeout_message(), "ranks 2, 3 of 4 did not join within 120 s (CANOPY_BOOTSTRAP_TIMEOUT_S)");
}

TEST(BootstrapRootGroup, DisagreeingHellosFailTheGroupNamingBothSides) {
  RootGroup a("1 s");
  ASSERT_TRUE(a.join(1, "10.0.0.1:5", hello(4, 0)).ok());
  EXPECT_EQ(a.join(2, "10.0.0.2:6", hello(8, 3)).message(),
            "rank 3 (at 10.0.0.2:6) says the group has 8 ranks, but rank 0 (at 10.0.0.1:5) said 4: give every rank "
            "the same nranks");
  RootGroup b("1 s");
  ASSERT_TRUE(b.join(1, "10.0.0.1:5", hello(4, 1)).ok());
  EXPECT_EQ(b.join(2, "10.0.0.2:6", hello(4, 1)).message(),
            "rank 1 joined twice: from 10.0.0.1:5 and from 10.0.0.2:6: give each process its own rank");
  RootGroup c("1 s");
  ASSERT_TRUE(c.join(1, "10.0.0.1:5", hello(2, 0, "0.1.0")).ok());
  EXPECT_EQ(c.join(2, "10.0.0.2:6", hello(2, 1, "0.2.0")).message(),
            "rank 1 (at 10.0.0.2:6) runs Canopy 0.2.0, but rank 0 (at 10.0.0.1:5) runs Canopy 0.1.0: run one Canopy "
            "version in every process");
  RootGroup d("1 s");
  EXPECT_EQ(d.join(1, "10.0.0.1:5", hello(2, 2)).message(), "rank 2 (at 10.0.0.1:5) is not a rank of a group of 2 "
                                                            "(0 to 1)");
  RootGroup e("1 s");
  EXPECT_THAT(e.join(1, "10.0.0.1:5", hello(0, 0)).message(), HasSubstr("says the group has 0 ranks"));
}

TEST(BootstrapRootGroup, AllgatherRoundsCompleteInRankOrderAndRefuseStrayParts) {
  RootGroup g("2 s");
  ASSERT_TRUE(g.join(1, "h:1", hello(2, 1)).ok());
  ASSERT_TRUE(g.join(2, "h:2", hello(2, 0)).ok());
  bool done = false;
  ASSERT_TRUE(g.contribute(1, {0, "one"}, &done).ok());
  EXPECT_FALSE(done);
  EXPECT_EQ(g.round_timeout_message(),
            "allgather round 0: rank 0 of 2 did not take part within 2 s (CANOPY_BOOTSTRAP_TIMEOUT_S)");
  EXPECT_EQ(g.contribute(1, {0, "again"}, &done).message(), "rank 1 (at h:1) sent its part of allgather round 0 "
                                                            "twice");
  ASSERT_TRUE(g.contribute(2, {0, "zero"}, &done).ok());
  ASSERT_TRUE(done);
  const AllgatherResult r = g.take_result();
  EXPECT_EQ(r.round, 0u);
  EXPECT_EQ(r.payloads, (std::vector<std::string>{"zero", "one"}));
  EXPECT_EQ(g.contribute(2, {5, "late"}, &done).message(),
            "rank 0 (at h:2) sent its part of allgather round 5, but the group is at round 1");
}

TEST(BootstrapRootGroup, LeavingIsFineBetweenRoundsAndFailsTheGroupOtherwise) {
  RootGroup forming("1 s");
  ASSERT_TRUE(forming.join(1, "h:1", hello(2, 0)).ok());
  EXPECT_EQ(forming.leave(1).message(), "rank 0 (at h:1) closed its connection before all 2 ranks joined");

  RootGroup g("1 s");
  ASSERT_TRUE(g.join(1, "h:1", hello(3, 0)).ok());
  ASSERT_TRUE(g.join(2, "h:2", hello(3, 1)).ok());
  ASSERT_TRUE(g.join(3, "h:3", hello(3, 2)).ok());
  bool done = false;
  ASSERT_TRUE(g.contribute(1, {0, ""}, &done).ok());
  EXPECT_EQ(g.leave(2).message(), "rank 1 (at h:2) closed its connection during allgather round 0");

  RootGroup quiet("1 s");
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(quiet.join(r, "h", hello(2, r)).ok());
  ASSERT_TRUE(quiet.leave(0).ok());
  EXPECT_FALSE(quiet.everyone_left());
  EXPECT_THAT(quiet.contribute(1, {0, ""}, &done).message(), HasSubstr("rank 0 (at h) has left the group"));
  ASSERT_TRUE(quiet.leave(1).ok());
  EXPECT_TRUE(quiet.everyone_left());
}

}  // namespace
}  // namespace canopy
