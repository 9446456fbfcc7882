// StagingArea on any CPU, over a PeerMemory that records what it is asked: regions of at least 1 MiB, in powers of two,
// send then receive in one allocation per rank; growth frees the old area first, or keeps it (retired) once calls were
// captured into CUDA graphs that name it; release frees everything once.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "runtime/processes/staging_area.hpp"

namespace canopy {
namespace {

class RecordingPeerMemory final : public PeerMemory {
 public:
  explicit RecordingPeerMemory(int ranks) : ranks_(ranks), peer_(1, std::vector<bool>(1, true)) {}
  std::string kind() const override { return "recording"; }
  const std::vector<std::vector<bool>>& peer() const override { return peer_; }
  std::vector<void*> allocate_zeroed(const std::function<std::size_t(int)>& bytes) override {
    std::vector<void*> out;
    for (int r = 0; r < ranks_; ++r) {
      sizes.push_back(bytes(r));
      out.push_back(std::malloc(1));
      ++live;
    }
    return out;
  }
  void* allocate(int, std::size_t) override { return nullptr; }
  void free(void* p) override {
    if (p) --live, std::free(p);
  }
  void ready() override {}
  std::vector<std::size_t> sizes;
  int live = 0;

 private:
  int ranks_;
  std::vector<std::vector<bool>> peer_;
};

TEST(StagingArea, RegionsAreAtLeastOneMebibyteInPowersOfTwo) {
  RecordingPeerMemory peers(3);
  StagingArea area;
  EXPECT_FALSE(area.fits(0, 0));  // nothing made yet
  area.grow(peers, 100, 3 << 20);
  EXPECT_EQ(area.send_bytes, std::size_t{1} << 20);
  EXPECT_EQ(area.recv_bytes, std::size_t{4} << 20);
  EXPECT_EQ(peers.sizes, (std::vector<std::size_t>(3, std::size_t{5} << 20)));
  EXPECT_TRUE(area.fits(1 << 20, 4 << 20));
  EXPECT_FALSE(area.fits((1 << 20) + 1, 0));
  EXPECT_EQ(static_cast<char*>(area.recv(2)) - static_cast<char*>(area.send(2)), 1 << 20);
}

TEST(StagingArea, GrowingFreesTheOldAreaAndReleaseFreesTheRest) {
  RecordingPeerMemory peers(2);
  StagingArea area;
  area.grow(peers, 1, 1);
  EXPECT_EQ(peers.live, 2);
  area.grow(peers, 8 << 20, 1);
  EXPECT_EQ(peers.live, 2);
  EXPECT_EQ(area.send_bytes, std::size_t{8} << 20);
  area.release(peers);
  EXPECT_EQ(peers.live, 0);
  EXPECT_FALSE(area.fits(0, 0));
  area.release(peers);  // twice is harmless
  EXPECT_EQ(peers.live, 0);
}

// An allgather's large receive region survives a later reduce-scatter's large send region: the area never shrinks on
// either side, so a size that ran eagerly still fits when it is captured later (a capture cannot grow the area).
TEST(StagingArea, GrowingNeverShrinksEitherRegion) {
  RecordingPeerMemory peers(2);
  StagingArea area;
  area.grow(peers, 1 << 20, 4 << 20);  // allgather of 4 ranks: 1 MiB in, 4 MiB out
  area.grow(peers, 4 << 20, 1 << 20);  // reduce-scatter: 4 MiB in, 1 MiB out
  EXPECT_EQ(area.send_bytes, std::size_t{4} << 20);
  EXPECT_EQ(area.recv_bytes, std::size_t{4} << 20);
  EXPECT_TRUE(area.fits(1 << 20, 4 << 20));
  EXPECT_TRUE(area.fits(4 << 20, 1 << 20));
}

// After a capture the communicator grows with keep_old: a graph replayed later still names the old area, so it stays
// allocated (and distinct from the new one) until release.
TEST(StagingArea, GrowingAfterACaptureKeepsTheOldAreaUntilRelease) {
  RecordingPeerMemory peers(2);
  StagingArea area;
  area.grow(peers, 1, 1);
  const std::vector<void*> captured = area.base;
  area.grow(peers, 8 << 20, 1, /*keep_old=*/true);
  EXPECT_EQ(peers.live, 4);
  EXPECT_EQ(area.retired, captured);
  EXPECT_NE(area.base, captured);
  EXPECT_EQ(area.send_bytes, std::size_t{8} << 20);
  area.grow(peers, 32 << 20, 1, /*keep_old=*/true);
  EXPECT_EQ(peers.live, 6);
  area.release(peers);
  EXPECT_EQ(peers.live, 0);
  EXPECT_TRUE(area.retired.empty());
}

}  // namespace
}  // namespace canopy
