// The direct protocol for ranks that must not touch each other's buffers (one process per GPU: only the
// communicator's memory is mapped into every process, never the callers' buffers). Every rank stores what a peer
// needs into that peer's inbox, one slot per source rank in the peer's scratch (communicator memory), and then
// combines or copies its own inbox into its own receive buffer. One launch per call, two handshakes per block, as in
// templates/direct.cuh, whose counters it shares: block b of a rank tells the ranks that store into its inbox that
// they may ("entered": its stream has reached this call, so its launch before has finished reading the inbox) and
// waits for that word from the ranks it stores to; it stores its part of the elements into their inboxes, then,
// after the block's barrier, with a system-scope release, tells each of them that its stores are complete ("done")
// and waits for the same from the ranks that store to it; last it moves its part from its inbox into its receive
// buffer, contributions combined in rank order. No rank reads another's buffers, so no rank waits for its readers at
// the end, and in place is safe for every collective. With Config::kPiece (elements, a multiple of 16 bytes; 0: off)
// a block's part moves in pieces, each with its own "done" word, so that a receiver moves one piece while the next
// crosses the link, as NCCL's chunked pipeline does. One-shot only (Config::kTwoShot is false). Block b of every rank
// handles the same elements of each slot, as in direct.cuh. Generated code (codegen/direct_source.hpp,
// DirectSpec::inbox) supplies the Config.
#pragma once

#include "canopy/direct.cuh"

namespace canopy {

// Whether rank `me` stores into rank `peer`'s inbox in collective C::kCollective.
template <typename C>
__device__ __forceinline__ bool inbox_sends(int me, int peer) {
  if (me == peer) return false;
  if (C::kCollective == kDirectBroadcast) return me == C::kRoot;
  if (C::kCollective == kDirectReduce) return peer == C::kRoot;
  return true;
}

// Elements of one source's slot in an inbox: the call's count rounded up to whole 16-byte vectors, so every slot
// starts aligned (codegen/direct_source.hpp: direct_inbox_bytes sizes the inbox so).
template <typename C>
__device__ __forceinline__ unsigned long long inbox_slot(unsigned long long n) {
  constexpr unsigned long long vec = 16 / sizeof(typename C::T);
  return (n + vec - 1) / vec * vec;
}

// The "done" word of piece k of launch e (a whole part is piece 0): the epoch in the top 32 bits and the pieces stored
// so far below, so a later launch's words are always larger. Kernels in pieces and whole ones share these words (a
// communicator's broadcasts and reduces may move in pieces, its other collectives whole), so every kernel marks alike:
// a bare epoch after a launch in pieces would be reached already, and the inbox read before the peers stored into it.
template <typename C>
__device__ __forceinline__ unsigned long long inbox_done_mark(unsigned long long e, unsigned long long k) {
  return (e << 32) | (k + 1);
}

// The inbox kernels' handshakes for block b of rank `me`, over the ranks a predicate picks ("entered" is
// direct.cuh's direct_enter, over the ranks that store into an inbox: my launch before has finished reading mine).
// inbox_post: every thread's stores before the word `mark` (inbox_done_mark) that they are complete, to each rank
// to(q) picks. The block's barrier orders the other threads' stores before the leader's, and the leader's system-scope
// release is cumulative: it publishes what the barrier ordered before it (the pattern of NCCL's postPeer: barrier,
// then an acq_rel fence and a relaxed store). A full fence (__threadfence_system) before it made every collective
// 2-10 % slower at 4-32 MiB on two H200s and ordered nothing more (bench/results/h200x2-procs2-inbox-fence-ab.txt).
template <typename C, typename To>
__device__ __forceinline__ void inbox_post(const typename C::Args& a, int me, int b, unsigned long long mark, To to) {
  __syncthreads();
  if (leader())
    for (int q = 0; q < C::kRanks; ++q)
      if (to(q)) store_release(flag(a.rank[q], direct_done<C>(me, b)), mark);
}

// inbox_await: until every rank from(q) picks has posted `mark` to me.
template <typename C, typename From>
__device__ __forceinline__ void inbox_await(const typename C::Args& a, int me, int b, unsigned long long mark,
                                            From from) {
  if (leader())
    for (int q = 0; q < C::kRanks; ++q)
      if (from(q)) wait(flag(a.rank[me], direct_done<C>(q, b)), mark);
  sync();
}

template <typename C>
__device__ __forceinline__ void run_direct_inbox_block(const typename C::Args& a, int me, int b,
                                                       unsigned long long e) {
  typedef typename C::T T;
  typedef typename C::Op Op;
  static_assert(!C::kTwoShot, "the inbox kernels are one-shot");
  static_assert(C::kPiece % (16 / sizeof(T)) == 0, "a piece is whole 16-byte vectors");
  const unsigned long long n = a.count;
  const ElementPart mine = element_part<T>(n, b, C::kBlocks);
  const unsigned long long first = mine.first, len = mine.length, last = first + len;
  const unsigned long long slot = inbox_slot<C>(n);
  // The part moves in pieces of C::kPiece elements (0: whole), each with a "done" word of its own, so a receiver
  // moves piece k while piece k + 1 crosses the link.
  const unsigned long long piece = C::kPiece > 0 ? C::kPiece : (len > 0 ? len : 1);
  const unsigned long long pieces = (len + piece - 1) / piece;
  const T* in = static_cast<const T*>(a.rank[me].send);
  T* out = static_cast<T*>(a.rank[me].recv);
  // Slot `source` of `owner`'s inbox, at element `at` of the slot.
  auto inbox = [&](int owner, int source, unsigned long long at) {
    return static_cast<T*>(a.rank[owner].scratch) + static_cast<unsigned long long>(source) * slot + at;
  };

  // Stores elements [at, at + count) of my part into the inbox of every rank that needs them, starting after myself
  // so that ranks spread their stores over the peers. One read of my input serves every destination, and my own copy
  // where there is one (the broadcast root's, allgather's own block), unless in place.
  auto store = [&](unsigned long long at, unsigned long long count) {
    if (C::kCollective == kDirectReduceScatter) {
      for (int k = 1; k < C::kRanks; ++k) {  // share q of my input into q's inbox
        const int q = (me + k) % C::kRanks;
        Pointers<T, 1> d;
        Pointers<const T, 1> s;
        d.p[0] = inbox(q, me, at);
        s.p[0] = in + static_cast<unsigned long long>(q) * n + at;
        reduce_copy<Op, T, 1, 1>(d, s, 1, count);
      }
      return;
    }
    Pointers<T, C::kRanks> d;
    Pointers<const T, 1> s;
    s.p[0] = in + at;
    bool any = false;
#pragma unroll
    for (int k = 0; k < C::kRanks; ++k) {
      const int q = (me + 1 + k) % C::kRanks;
      d.p[k] = nullptr;
      if (inbox_sends<C>(me, q)) {
        d.p[k] = inbox(q, me, at);
      } else if (q == me && C::kCollective == kDirectAllGather) {
        d.p[k] = out + static_cast<unsigned long long>(me) * n + at;
      } else if (q == me && C::kCollective == kDirectBroadcast && me == C::kRoot) {
        d.p[k] = out + at;
      }
      if (d.p[k] == s.p[0]) d.p[k] = nullptr;  // in place: already there
      any = any || d.p[k] != nullptr;
    }
    if (any) reduce_copy<Op, T, 1, C::kRanks>(d, s, 1, count);
  };

  // Every thread's stores of piece k to peers before the word that they are complete (inbox_post).
  auto post = [&](unsigned long long k) {
    inbox_post<C>(a, me, b, inbox_done_mark<C>(e, k), [&](int q) { return inbox_sends<C>(me, q); });
  };

  // Until piece k of every rank that stores to me has arrived.
  auto await = [&](unsigned long long k) {
    inbox_await<C>(a, me, b, inbox_done_mark<C>(e, k), [&](int q) { return inbox_sends<C>(q, me); });
  };

  // Elements [at, at + count) of my inbox into my receive buffer: copied (broadcast, allgather) or combined with my
  // input in rank order.
  auto move = [&](unsigned long long at, unsigned long long count) {
    if (C::kCollective == kDirectAllGather) {
      for (int q = 0; q < C::kRanks; ++q) {
        if (q == me) continue;
        Pointers<T, 1> d;
        Pointers<const T, 1> s;
        d.p[0] = out + static_cast<unsigned long long>(q) * n + at;
        s.p[0] = inbox(me, q, at);
        reduce_copy<Op, T, 1, 1>(d, s, 1, count);
      }
    } else if (C::kCollective == kDirectBroadcast) {
      if (me == C::kRoot) return;
      Pointers<T, 1> d;
      Pointers<const T, 1> s;
      d.p[0] = out + at;
      s.p[0] = inbox(me, C::kRoot, at);
      reduce_copy<Op, T, 1, 1>(d, s, 1, count);
    } else if (C::kCollective != kDirectReduce || me == C::kRoot) {
      // allreduce, reduce at the root, reduce-scatter (my share of my own input)
      const unsigned long long mine =
          C::kCollective == kDirectReduceScatter ? static_cast<unsigned long long>(me) * n : 0;
      Pointers<T, 1> d;
      Pointers<const T, C::kRanks> s;
      d.p[0] = out + at;
#pragma unroll
      for (int q = 0; q < C::kRanks; ++q) s.p[q] = q == me ? in + mine + at : inbox(me, q, at);
      reduce_copy<Op, T, C::kRanks, 1>(d, s, C::kRanks, count);
    }
  };

  // 1. Entered: the ranks that store into my inbox may; wait until the ranks I store to have entered too.
  direct_enter<C>(a, me, b, e, [](int storer, int owner) { return inbox_sends<C>(storer, owner); });

  // 2. Piece by piece: piece 0 stored and posted first; then, for each piece k, wait until the peers' piece k is here,
  // store piece k + 1 (its stores cross the link while this block moves piece k), move piece k into the receive
  // buffer, post piece k + 1. A whole part (C::kPiece 0) is one piece: store, post, wait, move. A block of no
  // elements (its part empty on every rank alike) takes no handshake past "entered".
  if (pieces == 0) return;
  store(first, piece < len ? piece : len);
  post(0);
  for (unsigned long long k = 0; k < pieces; ++k) {
    await(k);
    const unsigned long long at = first + k * piece, next = at + piece;
    if (k + 1 < pieces) store(next, last - next < piece ? last - next : piece);
    move(at, last - at < piece ? last - at : piece);
    if (k + 1 < pieces) post(k + 1);
  }
}

// blockIdx.x = local rank k x C::kBlocks + block: rank ranks[k] of device `device`.
template <typename C>
__device__ __forceinline__ void run_direct_inbox(const typename C::Args& a, const int* ranks, int device) {
  const unsigned long long e = begin_launch(a.launches[device], a.epoch, a.abort);
  run_direct_inbox_block<C>(a, ranks[blockIdx.x / C::kBlocks], blockIdx.x % C::kBlocks, e);
  end_launch(a.launches[device], a.epoch, e);
}

}  // namespace canopy
