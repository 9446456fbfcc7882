// PairPostings: how the two processes of a send and its receive agree on the message without waiting for each other
// (PairPointToPoint, pair_point_to_point.hpp). In NCCL only the two peers take part in a send and its receive, and each
// posts its side when its host thread gets there: the k-th send from rank a to rank b meets the k-th receive of b from
// a, and both must give the same count and type. Each side writes its k-th message (count, type) into a book of its
// own in host memory both processes map, then reads the other side's book: where the other has posted its k-th too,
// the side posting second (or both, when they post at the same moment) compares the two; where it has not, the other
// will compare when it posts. Sequentially consistent stores and loads (Dekker's order) make sure that at least one
// side sees both, so a mismatch is always found, before the side that finds it has queued anything of that message.
// A book keeps the last kPostingSlots messages: a side may run that far ahead of the other, then its host waits.
// Pure host code on plain memory, tested on any CPU with threads standing for the processes.
#pragma once

#include <cstdint>
#include <optional>

namespace canopy {

inline constexpr std::uint32_t kPostingSlots = 1024;

// One posted message: its count and type as the runtime's DataType (a number, so that the book is plain memory).
struct PostedMessage {
  std::uint64_t count = 0;
  std::uint32_t dtype = 0;
  bool operator==(const PostedMessage&) const = default;
};

// One side's book for one ordered rank pair (a's sends to b, or b's receives from a), in shared host memory, zeroed.
struct PostingBook {
  std::uint64_t posted = 0;  // messages posted so far
  std::uint64_t seen = 0;    // messages posted whose other side this side has read since (or found not yet there)
  std::uint64_t pad[6] = {};
  struct Entry {
    std::uint64_t number = 0;  // the message's number + 1 (0: never written)
    std::uint64_t count = 0;
    std::uint32_t dtype = 0;
    std::uint32_t pad = 0;
  } entries[kPostingSlots];
};

// Whether the side owning `mine` may post its next message: the other side has seen (posted, then read ours) every
// message but the last kPostingSlots, so the entry about to be overwritten is read by nobody any more.
bool posting_room(const PostingBook& mine, const PostingBook& theirs);

// What posting found.
struct PostingCheck {
  std::uint64_t number = 0;             // the message just posted (0-based)
  std::optional<PostedMessage> theirs;  // the other side's same message, where it had posted it: compare
};

// Posts `message` as the next of `mine` (posting_room holds), then reads the other side's same message.
PostingCheck post_message(PostingBook& mine, const PostingBook& theirs, PostedMessage message);

}  // namespace canopy
