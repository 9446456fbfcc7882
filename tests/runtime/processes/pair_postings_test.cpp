// The books in which a send's process and its receive's agree on each message (pair_postings.hpp), without a GPU: two
// threads stand for the two processes and post thousands of messages at their own pace. Every message is compared by
// at least one side, every planted mismatch is found at its number and nothing else is, and a side that runs
// kPostingSlots messages ahead is held until the other catches up.
#include "runtime/processes/pair_postings.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace canopy {
namespace {

TEST(PairPostings, TheSecondToPostComparesAndTheFirstLeavesItToIt) {
  auto send = std::make_unique<PostingBook>(), recv = std::make_unique<PostingBook>();
  const PostingCheck first = post_message(*send, *recv, PostedMessage{8, 1});
  EXPECT_EQ(first.number, 0u);
  EXPECT_FALSE(first.theirs.has_value());  // the receive is not there yet
  const PostingCheck second = post_message(*recv, *send, PostedMessage{7, 1});
  EXPECT_EQ(second.number, 0u);
  ASSERT_TRUE(second.theirs.has_value());
  EXPECT_EQ(second.theirs->count, 8u);  // the receive's side sees the send's count: they differ
  EXPECT_EQ(second.theirs->dtype, 1u);
}

TEST(PairPostings, ASideKPostingSlotsAheadWaitsUntilTheOtherHasSeenTheOldestEntry) {
  auto send = std::make_unique<PostingBook>(), recv = std::make_unique<PostingBook>();
  for (std::uint32_t m = 0; m < kPostingSlots; ++m) {
    ASSERT_TRUE(posting_room(*send, *recv)) << m;
    post_message(*send, *recv, PostedMessage{m, 0});
  }
  EXPECT_FALSE(posting_room(*send, *recv));  // entry 0 would be overwritten before the receiver read it
  const PostingCheck r = post_message(*recv, *send, PostedMessage{0, 0});
  ASSERT_TRUE(r.theirs.has_value());
  EXPECT_EQ(r.theirs->count, 0u);
  EXPECT_TRUE(posting_room(*send, *recv));
}

// Both sides post `n` messages concurrently, with pauses at random; the receiver's counts differ at `planted`.
TEST(PairPostings, ConcurrentSidesCompareEveryMessageAndFindExactlyThePlantedMismatches) {
  constexpr std::uint64_t n = 5000;
  const std::set<std::uint64_t> planted = {0, 17, 1023, 1024, 3000, n - 1};
  auto send = std::make_unique<PostingBook>(), recv = std::make_unique<PostingBook>();
  std::vector<std::atomic<int>> compared(n);
  std::vector<std::atomic<int>> mismatched(n);
  const auto side = [&](PostingBook& mine, const PostingBook& theirs, bool receiver, unsigned seed) {
    std::mt19937 rng(seed);
    for (std::uint64_t m = 0; m < n; ++m) {
      while (!posting_room(mine, theirs)) std::this_thread::yield();
      const std::uint64_t count = m * 3 + ((receiver && planted.count(m)) ? 1 : 0);
      const PostingCheck c = post_message(mine, theirs, PostedMessage{count, 4});
      ASSERT_EQ(c.number, m);
      if (c.theirs) {
        compared[m]++;
        if (!(*c.theirs == PostedMessage{count, 4})) mismatched[m]++;
      }
      if (rng() % 64 == 0) std::this_thread::yield();
    }
  };
  std::thread a([&] { side(*send, *recv, false, 1); });
  std::thread b([&] { side(*recv, *send, true, 2); });
  a.join();
  b.join();
  for (std::uint64_t m = 0; m < n; ++m) {
    EXPECT_GE(compared[m].load(), 1) << "message " << m << " was compared by neither side";
    EXPECT_EQ(mismatched[m].load() > 0, planted.count(m) == 1) << "message " << m;
  }
}

}  // namespace
}  // namespace canopy
