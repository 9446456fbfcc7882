// Protocol limits from measured times (runtime/protocol/protocol_choice.hpp): the cheapest split of the sizes into runs of
// LL, LL128, direct and planned, protocols that cannot run a size never given it, the untuned choice kept within
// noise, and malformed tables refused.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "runtime/protocol/protocol_choice.hpp"

namespace canopy {
namespace {

constexpr std::uint64_t K = 1024, M = 1024 * 1024;
using Row = std::array<std::optional<double>, kProtocols>;
constexpr std::optional<double> N;  // cannot run that size
constexpr auto LL = Protocol::low_latency, L128 = Protocol::ll128, DIR = Protocol::direct, PLAN = Protocol::planned;

TEST(ProtocolChoice, ProtocolAtFollowsTheLimitsInOrder) {
  const ProtocolLimits l{256 * K, 2 * M, 32 * M};
  EXPECT_EQ(protocol_at(l, 8), LL);
  EXPECT_EQ(protocol_at(l, 256 * K), LL);
  EXPECT_EQ(protocol_at(l, 256 * K + 1), L128);
  EXPECT_EQ(protocol_at(l, 2 * M), L128);
  EXPECT_EQ(protocol_at(l, 32 * M), DIR);
  EXPECT_EQ(protocol_at(l, 32 * M + 1), PLAN);
  // A limit within the one before takes nothing.
  EXPECT_EQ(protocol_at(ProtocolLimits{1 * M, 512 * K, 0}, 768 * K), LL);
  EXPECT_EQ(protocol_at(ProtocolLimits{1 * M, 2 * M, 0}, 1536 * K), L128);
  EXPECT_EQ(protocol_at(ProtocolLimits{1 * M, 512 * K, 0}, 1536 * K), PLAN);
  EXPECT_EQ(protocol_at(ProtocolLimits{}, 8), PLAN);
  EXPECT_EQ(describe(l), "LL to 256 KiB, LL128 to 2 MiB, direct to 32 MiB");
  EXPECT_EQ(describe(ProtocolLimits{64 * K, 0, 16 * M}), "LL to 64 KiB, direct to 16 MiB");
  EXPECT_EQ(describe(ProtocolLimits{}), "planned only");
  EXPECT_STREQ(to_string(L128), "LL128");
}

TEST(ProtocolChoice, EachSizeGetsItsFastestWhenTheWinnersComeInOrder) {
  ProtocolTimes t;
  t.sizes = {64 * K, 256 * K, 1 * M, 4 * M, 16 * M, 64 * M};
  t.us = {Row{5, 7, 9, 20},    Row{8, 8.5, 10, 22}, Row{16, 11, 12, 30},
          Row{40, 20, 19, 35}, Row{N, 60, 50, 55},  Row{N, 200, 195, 180}};
  t.incumbent = {LL, LL, DIR, DIR, DIR, PLAN};
  const ProtocolChoice c = choose_protocol_limits(t);
  EXPECT_EQ(c.limits, (ProtocolLimits{256 * K, 1 * M, 16 * M}));
  EXPECT_EQ(c.picked, (std::vector<Protocol>{LL, LL, L128, DIR, DIR, PLAN}));
  EXPECT_DOUBLE_EQ(c.cost, 6.0);
  EXPECT_NEAR(c.incumbent_cost, 5.0 + 12.0 / 11.0, 1e-12);
  EXPECT_TRUE(c.changed);
}

TEST(ProtocolChoice, OutOfOrderWinnersGetTheCheapestOrderedSplit) {
  // LL128 wins once inside direct's run, by less than direct wins the sizes around it: one run of direct.
  ProtocolTimes t;
  t.sizes = {1 * M, 2 * M, 4 * M, 8 * M};
  t.us = {Row{N, 20, 10, 30}, Row{N, 15.5, 16, 30}, Row{N, 40, 20, 50}, Row{N, 60, 30, 70}};
  t.incumbent = {DIR, DIR, DIR, DIR};
  const ProtocolChoice c = choose_protocol_limits(t);
  EXPECT_EQ(c.picked, (std::vector<Protocol>{DIR, DIR, DIR, DIR}));
  EXPECT_EQ(c.limits, (ProtocolLimits{0, 0, 8 * M}));
  EXPECT_NEAR(c.cost, 3.0 + 16.0 / 15.5, 1e-12);
  EXPECT_FALSE(c.changed);  // that is the untuned choice
}

TEST(ProtocolChoice, AProtocolThatCannotRunASizeIsNeverGivenIt) {
  // LL128 is fastest where it runs, but cannot run 512 KiB (say its buffers were too large there): its run stops
  // before it, and LL cannot take 512 KiB either, since LL128 comes after LL.
  ProtocolTimes t;
  t.sizes = {128 * K, 256 * K, 512 * K, 1 * M};
  t.us = {Row{6, 5, 9, 20}, Row{8, 7, 10, 22}, Row{12, N, 11, 30}, Row{20, 9, 12, 35}};
  t.incumbent = {LL, LL, DIR, DIR};
  const ProtocolChoice c = choose_protocol_limits(t);
  for (std::size_t i = 0; i < t.sizes.size(); ++i)
    EXPECT_TRUE(t.us[i][static_cast<int>(c.picked[i])].has_value()) << t.sizes[i];
  EXPECT_EQ(c.picked, (std::vector<Protocol>{L128, L128, DIR, DIR}));
  EXPECT_EQ(c.limits, (ProtocolLimits{0, 256 * K, 1 * M}));
}

TEST(ProtocolChoice, NoiseKeepsTheUntunedChoice) {
  // Planned is 1% faster at one size: within the gain, so the untuned limits stay.
  ProtocolTimes t;
  t.sizes = {1 * M, 2 * M, 4 * M};
  t.us = {Row{N, N, 10, 12}, Row{N, N, 15, 16}, Row{N, N, 20.2, 20}};
  t.incumbent = {DIR, DIR, DIR};
  const ProtocolChoice c = choose_protocol_limits(t);
  EXPECT_EQ(c.limits, (ProtocolLimits{0, 0, 2 * M}));
  EXPECT_LT(c.cost, c.incumbent_cost);
  EXPECT_FALSE(c.changed);
  EXPECT_TRUE(choose_protocol_limits(t, 0.001).changed);
}

TEST(ProtocolChoice, SmallGainsAtManySizesKeepTheUntunedChoiceAndALargeOneMovesIt) {
  // LL 3% faster than direct at four sizes: 0.12 in all, but 3% a size moved, within the 5% asked per size.
  ProtocolTimes t;
  t.sizes = {64 * K, 128 * K, 256 * K, 512 * K, 1 * M};
  t.us = {Row{9.7, N, 10, 20}, Row{9.7, N, 10, 20}, Row{9.7, N, 10, 20}, Row{9.7, N, 10, 20}, Row{15, N, 10, 20}};
  t.incumbent = {DIR, DIR, DIR, DIR, DIR};
  ProtocolChoice c = choose_protocol_limits(t);
  EXPECT_EQ(c.limits, (ProtocolLimits{512 * K, 0, 1 * M}));
  EXPECT_EQ(c.moved, 4);
  EXPECT_FALSE(c.changed);
  // 30% at one of them is worth moving all four.
  t.us[0][0] = 7.0;
  c = choose_protocol_limits(t);
  EXPECT_EQ(c.moved, 4);
  EXPECT_TRUE(c.changed);
}

TEST(ProtocolChoice, MalformedTablesAreRefused) {
  ProtocolTimes t;
  EXPECT_THROW(choose_protocol_limits(t), Error);  // no sizes
  t.sizes = {2 * M, 1 * M};
  t.us = {Row{N, N, 1, 2}, Row{N, N, 1, 2}};
  t.incumbent = {DIR, DIR};
  EXPECT_THROW(choose_protocol_limits(t), Error);  // not ascending
  t.sizes = {1 * M, 2 * M};
  t.incumbent = {LL, DIR};
  EXPECT_THROW(choose_protocol_limits(t), Error);  // the untuned choice has no time
  t.incumbent = {DIR};
  EXPECT_THROW(choose_protocol_limits(t), Error);  // a row short
  t.incumbent = {DIR, DIR};
  t.us[1][3] = -1.0;
  EXPECT_THROW(choose_protocol_limits(t), Error);  // not a time
  t.us = {Row{N, N, 1, N}, Row{N, N, N, N}};
  EXPECT_THROW(choose_protocol_limits(t), Error);  // nothing runs 2 MiB, the untuned choice included
}

}  // namespace
}  // namespace canopy
