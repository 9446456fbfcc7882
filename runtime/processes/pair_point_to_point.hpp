// PairPointToPoint: sends and receives between ranks of different processes of one host (processes sharing a GPU
// included) as NCCL has them: only the two peers take part, each posting its side whenever its host thread gets there,
// and no order of posting deadlocks.
// - Rings. Each rank holds, in its GPU's memory that every process maps (PeerMemory, at the join), one ring of `slots`
//   slots of `slot_bytes` per rank of another process that it may send to. A message moves a slot at a time: the
//   sender copies a chunk of its buffer into the next slot, the receiver copies it out into its own buffer. No user
//   buffer is ever mapped by another process (PyTorch's caching allocator may free and reuse them at will).
// - Words. Each process has a page of host memory every process maps (SharedMemfds): per ordered pair of its rank a and
//   a rank b elsewhere, `sent` (the chunks a's sends to b have put into the ring so far) and `taken` (the chunks a's
//   receives from b have copied out so far). Side streams wait for these words and write them (StreamWords,
//   cuStreamWaitValue32 / cuStreamWriteValue32): a chunk is copied in once the receiver has taken the chunk its slot
//   held before, and copied out once the sender has put it there.
// - Lanes. Every ordered pair and direction has a side stream of its own (a's sends to b, a's receives from b), forked
//   from the caller's stream when the op is issued and joined back after it. A lane waits only for its pair's other
//   lane, which waits only for it, so no cycle can form across pairs, and a group's sends and receives run side by
//   side (a send larger than the ring completes only as its receiver takes it, as in NCCL).
// - Agreement. Before anything is queued, each side posts its message (count, type) in the pair's books
//   (pair_postings.hpp): the side posting second compares, so that a send and a receive that differ are found, named
//   and refused by whichever side posts second; the communicator then fails (the other side has already queued its
//   part), so that nothing waits for ever and no wrong result is returned as right.
// A failed communicator moves every word far ahead, again until every lane is idle, so no lane waits for a lost
// process or a refused peer.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/status.hpp"
#include "runtime/call/point_to_point.hpp"
#include "runtime/offload/stream_words.hpp"
#include "runtime/processes/pair_postings.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"
#include "runtime/transport/ipc/shared_memfds.hpp"
#include "runtime/transport/peer_memory.hpp"

namespace canopy {

// Where the rings and pages go: this process, which process holds each rank (a process's ranks are consecutive), this
// process's GPU, and the rings' shape.
struct PairLayout {
  int process = 0;
  std::vector<int> process_of_rank;
  int ordinal = 0;
  std::size_t slot_bytes = std::size_t{1} << 20;
  int slots = 4;

  int ranks() const { return static_cast<int>(process_of_rank.size()); }
  int processes() const;
  int first_rank(int process) const;  // the first rank `process` holds
  int own_ranks(int process) const;   // how many it holds
  // Which of rank a's rings holds its sends to rank b: b's index among the ranks outside a's process.
  int ring_of(int a, int b) const;
};

class PairPointToPoint {
 public:
  // Every process calls it together at the join (one step on `channel`, one allocation through `peers`). unsupported
  // where the driver lacks the stream memory operations (every process alike).
  static Status share(FdChannel& channel, PeerMemory& peers, PairLayout layout, std::unique_ptr<PairPointToPoint>* out);
  ~PairPointToPoint();  // the lanes waited for (released first where the communicator failed)
  PairPointToPoint(const PairPointToPoint&) = delete;
  PairPointToPoint& operator=(const PairPointToPoint&) = delete;

  // This process's ops whose peer is a rank of another process (checked: ranks, buffers, streams), posted and queued
  // on their lanes. Posting waits on the host only where a pair's side is kPostingSlots messages ahead of the other
  // (`given_up` is asked meanwhile: true ends the wait with its Status). invalid_argument naming both sides where a
  // message's count or type differs from its peer's: nothing of `ops` is then queued, and the caller must fail the
  // communicator (the peer may have queued its side).
  Status run(std::span<const PointToPoint> ops, const std::function<std::optional<Status>()>& given_up);
  // Ends every wait a lane is in or will queue. For a failed communicator, from any thread.
  void release();
  // At the communicator's end: the host waits up to `timeout` for every lane; lanes still waiting then (a send whose
  // receive was never posted, a peer that failed) are released until idle, their buffers left undefined, and the
  // Status says how many sends and receives were cut short. Before release_rings.
  Status drain(std::chrono::milliseconds timeout);
  // The rings given back (after drain, every process alike).
  void release_rings(PeerMemory& peers);

 private:
  struct PairWords;  // a pair's two words, on cache lines of their own
  explicit PairPointToPoint(PairLayout layout) : layout_(std::move(layout)) {}
  // The page of `process`, and in it the words and books of its rank `a` (its own) with rank `b`.
  PairWords& words(int a, int b) const;
  PostingBook& send_book(int a, int b) const;  // a's sends to b
  PostingBook& recv_book(int a, int b) const;  // a's receives from b
  std::size_t pair_index(int a, int b) const;  // within a's process's page
  int lane_of(int rank, int peer, bool send) const;  // the side stream of rank's sends to (receives from) peer
  int lane_of(const PointToPoint& op) const;
  char* slot(int sender, int receiver, int slot) const;
  Status post(const PointToPoint& op, std::size_t at, const std::function<std::optional<Status>()>& given_up);
  Status queue(const PointToPoint& op, int lane);  // its chunks on its lane
  void settle();  // released: release again until every lane is idle (a lane may write a word back below the value)

  PairLayout layout_;
  int max_own_ = 0;           // the most ranks a process holds: every page is laid out for it
  std::vector<void*> rings_;  // per rank, its rings (mapped here)
  SharedMemfds pages_;        // every process's page
  StreamWords words_;         // the pages registered, and the lanes
  // Per lane of this process: the chunks it has queued so far (read by release() on another thread).
  std::unique_ptr<std::atomic<std::uint32_t>[]> chunks_;
  std::atomic<bool> released_{false};
};

}  // namespace canopy
