// The direct inbox kernels' flow control (templates/direct_inbox.cuh) on the host model of direct_inbox_model.hpp:
// one-shot launches, whole and in pieces, mixed; and the faults the model must catch.
#include <gtest/gtest.h>

#include "tests/codegen/direct_inbox_model.hpp"

namespace canopy::inbox_model {
namespace {

TEST(DirectInboxModel, MixedCallsDeliverEveryElementWithoutOverwritingAnUnreadOne) {
  std::mt19937_64 rng(20261126);
  EXPECT_EQ(mixed_rounds(rng, 20, 0), "");
}

// The same with each block's part in pieces of one and of two vectors (counts up to 101 over 3 blocks: up to 9
// pieces a block, a short last one).
TEST(DirectInboxModel, InPiecesEveryElementArrivesAndNoUnreadOneIsOverwritten) {
  std::mt19937_64 rng(20261127);
  for (std::uint64_t piece : {kVec, 2 * kVec}) EXPECT_EQ(mixed_rounds(rng, 12, piece), "") << "pieces of " << piece;
}

TEST(DirectInboxModel, LaunchesInPiecesAndWholeMixedShareTheDoneWords) {
  std::mt19937_64 rng(20261128);
  EXPECT_EQ(mixed_rounds(rng, 20, 0, in_pieces_where_one_way), "");
}

// With the bare epoch as a whole part's "done" word, a whole launch after one in pieces finds the words of the
// launch before (the epoch times 2^32) already past its own epoch and moves its inbox before the peers stored
// into it: the wrong allreduce results two H200s showed after reduces in pieces (2026-11-27).
TEST(DirectInboxModel, WholePartsMarkedByTheEpochAloneAfterPiecesAreCaught) {
  std::mt19937_64 rng(13);
  int caught = 0;
  for (int round = 0; round < 40; ++round) {
    InboxModel model(2, {0, 1}, 2, /*wait_entered=*/true, 0, false, /*epoch_marks=*/true);
    std::vector<Call> calls;
    for (int k = 0; k < 4; ++k) {
      calls.push_back(Call{kReduce, 0, 64, kVec});
      calls.push_back(Call{kAllReduce, 0, 64, 0});
    }
    if (!model.run(calls, rng).empty()) ++caught;
  }
  EXPECT_GT(caught, 0) << "a whole launch's done word already reached by a launch in pieces went unnoticed";
}

// Moving piece k after waiting only for piece k - 1 reads elements the peer has not stored yet.
TEST(DirectInboxModel, MovingAPieceBeforeItsDoneWordIsCaught) {
  std::mt19937_64 rng(11);
  int caught = 0;
  for (int round = 0; round < 40; ++round) {
    InboxModel model(2, {0, 1}, 2, /*wait_entered=*/true, kVec, /*piece_lag=*/true);
    std::vector<Call> calls(6, Call{kAllReduce, 0, 64});
    if (!model.run(calls, rng).empty()) ++caught;
  }
  EXPECT_GT(caught, 0) << "a piece moved before it arrived went unnoticed";
}

// Without the wait for "entered", a rank that runs ahead stores into an inbox its owner has not read yet.
TEST(DirectInboxModel, StoresWithoutWaitingForEnteredAreCaught) {
  std::mt19937_64 rng(7);
  int caught = 0;
  for (int round = 0; round < 40; ++round) {
    InboxModel model(2, {0, 1}, 2, /*wait_entered=*/false);
    std::vector<Call> calls(10, Call{kAllReduce, 0, 64});
    if (!model.run(calls, rng).empty()) ++caught;
  }
  EXPECT_GT(caught, 0) << "an inbox overwritten before its owner read it went unnoticed";
}

}  // namespace
}  // namespace canopy::inbox_model
