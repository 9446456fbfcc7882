// SharedRings without a GPU: three "processes" (threads with their own FdChannel endpoints) share their rings; a
// word or a slot byte one writes is what the others read at the same place, the words neither overlap each other nor
// the slots, each slot remembers which processes read its last chunk (a broadcast's every other process, a reduce's
// root), release() ends every wait a ring's chunks so far could have queued, and a count of processes whose words do
// not fit the page is refused with the limit.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "runtime/offload/process_host_ring.hpp"
#include "runtime/offload/ring_sequence.hpp"
#include "runtime/offload/shared_rings.hpp"
#include "tests/runtime/threads_as_processes.hpp"

namespace canopy {
namespace {

std::vector<std::unique_ptr<SharedRings>> share_rings(int processes) {
  return share_among_threads<SharedRings>(processes, SharedRings::share);
}

TEST(SharedRings, WhatOneProcessWritesTheOthersReadAtTheSamePlace) {
  std::vector<std::unique_ptr<SharedRings>> r = share_rings(3);
  ASSERT_TRUE(r[0] && r[1] && r[2]);
  *r[1]->fill_word(1, 2) = 7;         // the root's fill word of its slot 2
  *r[2]->drain_word(1, 2, 2) = 6;     // process 2's drain word of that slot, in the root's ring
  std::memcpy(r[1]->slot(1, 3), "chunk", 6);
  for (int reader = 0; reader < 3; ++reader) {
    EXPECT_EQ(*r[reader]->fill_word(1, 2), 7u) << reader;
    EXPECT_EQ(*r[reader]->drain_word(1, 2, 2), 6u) << reader;
    EXPECT_STREQ(r[reader]->slot(1, 3), "chunk") << reader;
    EXPECT_EQ(*r[reader]->fill_word(0, 2), 0u) << reader;  // another ring's word is untouched
  }
}

TEST(SharedRings, TheWordsAreDistinctAndAfterTheSlots) {
  std::vector<std::unique_ptr<SharedRings>> r = share_rings(3);
  ASSERT_TRUE(r[0]);
  const SharedRings& s = *r[0];
  std::set<const std::uint32_t*> words;
  for (int ring = 0; ring < 3; ++ring) {
    const char* slots_end = s.slot(ring, SharedRings::kSlots - 1) + SharedRings::kSlotBytes;
    for (int slot = 0; slot < SharedRings::kSlots; ++slot) {
      words.insert(s.fill_word(ring, slot));
      for (int p = 0; p < 3; ++p) words.insert(s.drain_word(ring, slot, p));
      EXPECT_GE(reinterpret_cast<const char*>(s.fill_word(ring, slot)), slots_end);
      EXPECT_LT(reinterpret_cast<const char*>(s.drain_word(ring, slot, 2)),
                s.base(ring) + SharedRings::ring_bytes());
    }
  }
  EXPECT_EQ(words.size(), 3u * SharedRings::kSlots * 4);
}

TEST(SharedRings, ASlotRemembersWhoReadItsLastChunk) {
  std::vector<std::unique_ptr<SharedRings>> r = share_rings(3);
  ASSERT_TRUE(r[0]);
  SharedRings& s = *r[0];
  for (int p = 0; p < 3; ++p) EXPECT_FALSE(s.read_last(1, 0, p)) << p;  // no chunk yet
  s.count_chunk(1, 0);                                                    // a broadcast from process 1
  EXPECT_TRUE(s.read_last(1, 0, 0));
  EXPECT_FALSE(s.read_last(1, 0, 1));
  EXPECT_TRUE(s.read_last(1, 0, 2));
  s.count_chunk(1, 0, 2);  // a reduce to process 2: the refill after it waits for process 2 alone
  EXPECT_FALSE(s.read_last(1, 0, 0));
  EXPECT_TRUE(s.read_last(1, 0, 2));
  EXPECT_FALSE(s.read_last(1, 1, 0));  // other slots and rings are untouched
  EXPECT_FALSE(s.read_last(0, 0, 2));
  EXPECT_EQ(s.chunks(1), 2u);
}

TEST(SharedRings, ReleaseEndsEveryWaitTheChunksSoFarCouldHaveQueued) {
  std::vector<std::unique_ptr<SharedRings>> r = share_rings(2);
  ASSERT_TRUE(r[0] && r[1]);
  for (int k = 0; k < 9; ++k) r[0]->count_chunk(1, k % SharedRings::kSlots);
  EXPECT_EQ(r[0]->chunks(1), 9u);
  EXPECT_EQ(r[1]->chunks(1), 0u);  // each process counts for itself
  r[0]->release();
  for (int ring = 0; ring < 2; ++ring)
    for (int slot = 0; slot < SharedRings::kSlots; ++slot) {
      // The largest value a wait on ring 1 queued so far: a fill of chunk 9 + slots at most.
      for (std::uint32_t v : {1u, 9u, 9u + SharedRings::kSlots}) {
        EXPECT_TRUE(ring_word_reached(*r[1]->fill_word(ring, slot), v)) << ring << " " << slot << " " << v;
        for (int p = 0; p < 2; ++p) EXPECT_TRUE(ring_word_reached(*r[1]->drain_word(ring, slot, p), v));
      }
    }
}

// A reduce's chunk carries a piece per rank of the ring's process, side by side in one slot, in whole 4 KiB.
TEST(SharedRings, AReducesPiecesShareASlotInWhole4KiB) {
  EXPECT_EQ(ProcessHostRing::piece_for(1), SharedRings::kSlotBytes);
  EXPECT_EQ(ProcessHostRing::piece_for(2), SharedRings::kSlotBytes / 2);
  for (int ranks : {3, 5, 7, 32, 1000}) {
    const std::size_t piece = ProcessHostRing::piece_for(ranks);
    EXPECT_EQ(piece % 4096, 0u) << ranks;
    EXPECT_LE(piece * static_cast<std::size_t>(ranks), SharedRings::kSlotBytes) << ranks;
    EXPECT_GT((piece + 4096) * static_cast<std::size_t>(ranks), SharedRings::kSlotBytes) << ranks;
  }
}

TEST(SharedRings, TooManyProcessesForTheWordsPageAreRefused) {
  BootstrapSecret secret{};
  ASSERT_TRUE(random_secret(&secret).ok());
  std::unique_ptr<FdChannel> channel;
  ASSERT_TRUE(FdChannel::listen(secret, 0, {::getpid()}, FdChannel::Options{}, &channel).ok());
  std::unique_ptr<SharedRings> rings;
  const Status s = SharedRings::share(*channel, 0, 1000, &rings);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("at most 255 processes, not 1000"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace canopy
