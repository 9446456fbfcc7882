// How canopy bench prints its comparison with NCCL (bench/harness/rounds_text.hpp): NCCL's version and whether NVLS was off
// beside every NCCL figure; one round says it proves nothing; several rounds give each row the ratio's range and its
// verdict against the target, met only where the whole range clears it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bench/harness/rounds_text.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

TEST(BenchRounds, NcclsVersionAndNvlsStateHeadItsFigures) {
  EXPECT_EQ(nccl_context_line("2.28.9", "/x/libnccl.so.2", "0"),
            "# NCCL 2.28.9 (/x/libnccl.so.2), NVLS off (NCCL_NVLS_ENABLE=0)\n");
  EXPECT_THAT(nccl_context_line("2.28.9", "/x/libnccl.so.2", nullptr), HasSubstr("NCCL_NVLS_ENABLE unset"));
  EXPECT_THAT(nccl_context_line("2.28.9", "/x/libnccl.so.2", "1"), HasSubstr("NVLS allowed (NCCL_NVLS_ENABLE=1)"));
}

TEST(BenchRounds, OneRoundSaysItIsOneAndSeveralSayHowTheyAlternate) {
  EXPECT_THAT(rounds_header(1, 1.0), HasSubstr("one round a size, Canopy timed before NCCL"));
  const std::string five = rounds_header(5, 1.15);
  EXPECT_THAT(five, HasSubstr("5 rounds a size"));
  EXPECT_THAT(five, HasSubstr("the first alternating by round and by size"));
  EXPECT_THAT(five, HasSubstr("vs 1.15: met only where the whole range clears 1.15"));
  EXPECT_EQ(nccl_column_titles(1, 1.0).find("range"), std::string::npos);
  EXPECT_THAT(nccl_column_titles(5, 1.15), HasSubstr("vs 1.15"));
}

TEST(BenchRounds, EachRowsVerdictComesFromItsRange) {
  BenchRow r;
  r.rounds = 5;
  r.time_us = 10;
  r.time_min_us = 9.5;
  r.time_max_us = 10.5;
  r.nccl_time_us = 11.46;
  r.nccl_time_min_us = 11;
  r.nccl_time_max_us = 12;
  r.nccl_busbw_gbps = 100;
  const std::string at_115 = nccl_columns(r, 1.15);
  EXPECT_THAT(at_115, HasSubstr("1.15 ")) << "the median ratio 1.146 prints as 1.15 ...";
  EXPECT_THAT(at_115, HasSubstr("1.05–1.26"));
  EXPECT_THAT(at_115, HasSubstr("overlaps")) << "... and is not counted as meeting 1.15";
  EXPECT_THAT(nccl_columns(r, 1.0), HasSubstr("met"));
  EXPECT_THAT(nccl_columns(r, 1.3), HasSubstr("missed"));
  BenchRow none = r;
  none.nccl_time_us = 0;  // NCCL has no such call (a program's goal)
  EXPECT_THAT(nccl_columns(none, 1.0), HasSubstr("n/a"));
  BenchRow one = r;
  one.rounds = 1;
  EXPECT_EQ(nccl_columns(one, 1.0).find("met"), std::string::npos) << "one round gives no verdict";
}

}  // namespace
}  // namespace canopy
