// The two-shot inbox kernels' flow control (templates/direct_inbox_two_shot.cuh) on the host model of
// direct_inbox_model.hpp: broadcasts, reduces and allreduces in two shots, mixed with one-shot launches of every
// collective (whole and in pieces) that share the same inboxes and "entered" and "done" words; and the faults the
// model must catch.
#include <gtest/gtest.h>

#include "tests/codegen/direct_inbox_model.hpp"

namespace canopy::inbox_model {
namespace {

// Every broadcast, reduce and allreduce two-shot (the default from 2 MiB on three ranks or more), the others one-shot.
std::vector<Call> two_shot_where_it_can(std::vector<Call> calls) {
  for (Call& c : calls) c.two_shot = c.kind == kBroadcast || c.kind == kReduce || c.kind == kAllReduce;
  return calls;
}

// Half of them two-shot, by launch number; broadcasts and reduces that stay one-shot move in pieces.
std::vector<Call> two_shot_mixed_with_pieces(std::vector<Call> calls) {
  for (std::size_t k = 0; k < calls.size(); ++k) {
    Call& c = calls[k];
    const bool can = c.kind == kBroadcast || c.kind == kReduce || c.kind == kAllReduce;
    c.two_shot = can && k % 2 == 0;
    c.piece = !c.two_shot && (c.kind == kBroadcast || c.kind == kReduce) ? kVec : 0;
  }
  return calls;
}

TEST(DirectInboxTwoShotModel, EveryElementArrivesAndNoUnreadOneIsOverwritten) {
  std::mt19937_64 rng(20261128);
  EXPECT_EQ(mixed_rounds(rng, 20, 0, two_shot_where_it_can), "");
}

TEST(DirectInboxTwoShotModel, LaunchesOfBothShotsAndInPiecesShareTheWords) {
  std::mt19937_64 rng(20261129);
  EXPECT_EQ(mixed_rounds(rng, 20, 0, two_shot_mixed_with_pieces), "");
}

// A run of `calls` on 3 ranks, a device each, 2 blocks, under `fault`, 40 seeds: how many failed.
int caught(TwoShotFault fault, const std::vector<Call>& calls) {
  std::mt19937_64 rng(17);
  int failed = 0;
  for (int round = 0; round < 40; ++round) {
    InboxModel model(3, {0, 1, 2}, 2, /*wait_entered=*/true, 0, false, false, fault);
    if (!model.run(calls, rng).empty()) ++failed;
  }
  return failed;
}

// Combining a share before the peers' shot A has arrived reads the launch before's inbox.
TEST(DirectInboxTwoShotModel, CombiningBeforeShotAArrivesIsCaught) {
  const std::vector<Call> calls(10, Call{kAllReduce, 0, 64, 0, true});
  EXPECT_EQ(caught(TwoShotFault::none, calls), 0);
  EXPECT_GT(caught(TwoShotFault::combine_before_shot_a, calls), 0)
      << "a share combined before the peers' shot A arrived went unnoticed";
}

// Moving the peers' shares out before their shot B has arrived reads what a launch before stored there: a broadcast's
// receivers, whose shot B comes from the root and the other receivers.
TEST(DirectInboxTwoShotModel, CollectingBeforeShotBArrivesIsCaught) {
  const std::vector<Call> calls(10, Call{kBroadcast, 1, 64, 0, true});
  EXPECT_EQ(caught(TwoShotFault::none, calls), 0);
  EXPECT_GT(caught(TwoShotFault::collect_before_shot_b, calls), 0)
      << "a share moved out before the peer's shot B arrived went unnoticed";
}

}  // namespace
}  // namespace canopy::inbox_model
