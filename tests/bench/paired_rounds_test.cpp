// paired_rounds: the order of the two libraries alternates by round and by size; a library's rounds give their
// median and extremes; a ratio's range is the spreads' extremes, and a target is met only when the whole range clears
// it (a 1.146 median never counts as 1.15, nor a range that straddles the target).
#include <gtest/gtest.h>

#include <vector>

#include "bench/harness/paired_rounds.hpp"

namespace canopy {
namespace {

TEST(PairedRounds, TheLibraryGoingFirstAlternatesByRoundAndBySize) {
  int canopy_firsts = 0;
  for (int round = 0; round < 6; ++round) {
    EXPECT_NE(canopy_first(0, round), canopy_first(0, round + 1)) << "round " << round;
    EXPECT_NE(canopy_first(0, round), canopy_first(1, round)) << "the next size starts the other way";
    canopy_firsts += canopy_first(3, round) ? 1 : 0;
  }
  EXPECT_EQ(canopy_firsts, 3) << "each library first in half of an even number of rounds";
  EXPECT_TRUE(canopy_first(0, 0));
}

TEST(PairedRounds, ASpreadIsTheMedianAndTheExtremes) {
  const Spread odd = spread_of({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(odd.median, 3);
  EXPECT_DOUBLE_EQ(odd.min, 1);
  EXPECT_DOUBLE_EQ(odd.max, 5);
  const Spread even = spread_of({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(even.median, 2.5);
  const Spread one = spread_of({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.min, 7);
  EXPECT_DOUBLE_EQ(one.max, 7);
  const Spread none = spread_of({});
  EXPECT_DOUBLE_EQ(none.median, 0);
}

TEST(PairedRounds, ATargetIsMetOnlyWhenTheWholeRangeClearsIt) {
  // Canopy 10 us (9.5–10.5), NCCL 11.46 us (11.0–12.0): median ratio 1.146.
  const PairedRatio r = paired_ratio(Spread{10, 9.5, 10.5}, Spread{11.46, 11.0, 12.0});
  EXPECT_NEAR(r.median, 1.146, 1e-9);
  EXPECT_NEAR(r.low, 11.0 / 10.5, 1e-9);
  EXPECT_NEAR(r.high, 12.0 / 9.5, 1e-9);
  EXPECT_EQ(verdict(r, 1.15), TargetVerdict::overlaps) << "1.146 is not 1.15, and the range straddles it";
  EXPECT_EQ(verdict(r, 1.0), TargetVerdict::met);
  EXPECT_EQ(verdict(r, 1.3), TargetVerdict::missed);
  EXPECT_STREQ(to_string(TargetVerdict::overlaps), "overlaps");
  // The range's ends themselves: met at exactly the low end, missed just above the high end.
  EXPECT_EQ(verdict(r, r.low), TargetVerdict::met);
  EXPECT_EQ(verdict(r, r.high + 1e-9), TargetVerdict::missed);
  // No Canopy time (nothing measured): no ratio, nothing met.
  const PairedRatio empty = paired_ratio(Spread{}, Spread{11, 11, 11});
  EXPECT_DOUBLE_EQ(empty.median, 0);
  EXPECT_EQ(verdict(empty, 1.0), TargetVerdict::missed);
  EXPECT_EQ(range_text(0.971, 1.04), "0.97–1.04");
}

}  // namespace
}  // namespace canopy
