// PairPostings (see pair_postings.hpp): the books' entries written, then their counters stored and read in one total
// order (seq_cst), so that of two sides posting the same message at least one reads the other's.
#include "runtime/processes/pair_postings.hpp"

#include <atomic>

namespace canopy {

namespace {

std::uint64_t load(const std::uint64_t& word) {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(word)).load(std::memory_order_seq_cst);
}
void store(std::uint64_t& word, std::uint64_t value) {
  std::atomic_ref<std::uint64_t>(word).store(value, std::memory_order_seq_cst);
}

}  // namespace

bool posting_room(const PostingBook& mine, const PostingBook& theirs) {
  return load(mine.posted) < load(theirs.seen) + kPostingSlots;
}

PostingCheck post_message(PostingBook& mine, const PostingBook& theirs, PostedMessage message) {
  const std::uint64_t number = load(mine.posted);
  PostingBook::Entry& e = mine.entries[number % kPostingSlots];
  e.count = message.count;
  e.dtype = message.dtype;
  store(e.number, number + 1);
  store(mine.posted, number + 1);
  PostingCheck out;
  out.number = number;
  if (load(theirs.posted) > number) {
    // Their entry stays until we have seen it: posting_room keeps them from overwriting it before.
    const PostingBook::Entry& t = theirs.entries[number % kPostingSlots];
    if (load(t.number) == number + 1) out.theirs = PostedMessage{t.count, t.dtype};
  }
  store(mine.seen, number + 1);
  return out;
}

}  // namespace canopy
