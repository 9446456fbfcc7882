// CopyEnginePair's chunk schedules (runtime/offload/copy_engine_pair.hpp), which need no GPU: what each collective moves per
// copy, that the chunks add up to the call, and that every chunk but the last starts and ends on 64 KiB.
#include "runtime/offload/copy_engine_pair.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace canopy {
namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

std::vector<std::size_t> in_mib(std::vector<std::size_t> v) {
  for (std::size_t& x : v) x /= MiB;
  return v;
}

TEST(CopyEngineChunks, ABroadcastIsOneCopyUnlessTheChunkIsFixed) {
  EXPECT_EQ(CopyEnginePair::chunks(Collective::broadcast, std::size_t{1} << 30, 0),
            std::vector<std::size_t>{std::size_t{1} << 30});
  EXPECT_EQ(CopyEnginePair::chunks(Collective::broadcast, 200 * MiB + 5, 64 * MiB),
            (std::vector<std::size_t>{64 * MiB, 64 * MiB, 64 * MiB, 8 * MiB + 5}));
  EXPECT_TRUE(CopyEnginePair::chunks(Collective::broadcast, 0, 0).empty());
}

TEST(CopyEngineChunks, AnAllreduceMovesQuartersOfAtLeast16MiB) {
  EXPECT_EQ(in_mib(CopyEnginePair::chunks(Collective::allreduce, 1024 * MiB, 0)),
            (std::vector<std::size_t>{256, 256, 256, 256}));
  EXPECT_EQ(in_mib(CopyEnginePair::chunks(Collective::allreduce, 64 * MiB, 0)),
            (std::vector<std::size_t>{16, 16, 16, 16}));
  EXPECT_EQ(in_mib(CopyEnginePair::chunks(Collective::allreduce, 40 * MiB, 0)), (std::vector<std::size_t>{16, 16, 8}));
  EXPECT_EQ(CopyEnginePair::chunks(Collective::allreduce, MiB + 4, 0), std::vector<std::size_t>{MiB + 4});
}

TEST(CopyEngineChunks, AReduceTapersSoItsLastCombiningPassIsShort) {
  EXPECT_EQ(in_mib(CopyEnginePair::chunks(Collective::reduce, 1024 * MiB, 0)),
            (std::vector<std::size_t>{256, 256, 256, 4, 128, 64, 32, 16, 8, 4}));
  EXPECT_EQ(in_mib(CopyEnginePair::chunks(Collective::reduce, 64 * MiB, 0)),
            (std::vector<std::size_t>{16, 16, 16, 4, 8, 4}));
  EXPECT_EQ(CopyEnginePair::chunks(Collective::reduce, MiB, 0), std::vector<std::size_t>{MiB});
  EXPECT_EQ(in_mib(CopyEnginePair::chunks(Collective::reduce, 64 * MiB, 32 * MiB)), (std::vector<std::size_t>{32, 32}));
}

TEST(CopyEngineChunks, EverySizeAddsUpOnAlignedChunks) {
  std::mt19937_64 random(20261123);
  for (int i = 0; i < 2000; ++i) {
    const std::size_t bytes = random() % (std::size_t{3} << 30) + 1;
    const std::size_t fixed = i % 3 == 0 ? (random() % 64 + 1) * 4096 * 256 : 0;
    for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce}) {
      const std::vector<std::size_t> v = CopyEnginePair::chunks(c, bytes, fixed);
      ASSERT_FALSE(v.empty());
      EXPECT_EQ(std::accumulate(v.begin(), v.end(), std::size_t{0}), bytes) << bytes << " fixed " << fixed;
      for (std::size_t k = 0; k + 1 < v.size(); ++k) {
        EXPECT_GT(v[k], 0u);
        EXPECT_EQ(v[k] % (fixed ? 4096 : 64 * 1024), 0u) << bytes << " fixed " << fixed << " chunk " << k;
      }
      if (fixed == 0 && c != Collective::broadcast) {
        EXPECT_LE(v.size(), 4u + 1 + (c == Collective::reduce ? 7 : 0)) << bytes;
      }
    }
  }
}

}  // namespace
}  // namespace canopy
