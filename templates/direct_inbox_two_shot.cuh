// The two-shot inbox kernels: allreduce, broadcast and reduce for ranks that must not touch each other's buffers (one
// process per GPU), with no link carrying more than 2 (ranks - 1) / ranks of the buffer one way, where the one-shot
// inbox kernels (templates/direct_inbox.cuh) put (ranks - 1) times it on the root's link (on every rank's for
// allreduce). The elements split into one share per rank, as in direct.cuh's two-shot kernels, and move in two shots
// through the inboxes:
//   A. every contributing rank (all ranks; broadcast: the root) stores share q of its input into rank q's inbox;
//   B. rank q combines share q (its own input and its inbox, in rank order; broadcast: the root's copy) into its
//      receive buffer and stores the result into the inbox of every rank that needs it (all; reduce: the root);
//   then every rank moves the shares it received into its receive buffer.
// Shot A writes slot `me` of rank q's inbox at share q's elements, shot B slot `me` at share `me`'s, so the two never
// meet. The handshakes are the one-shot kernels', with one "done" word per shot (the marks of pieces 0 and 1): block b
// tells the ranks that store into its inbox that they may ("entered") and waits for the same from the ranks it stores
// to; after each shot's stores, the block's barrier and a system-scope release tell the receivers that they are
// complete. Block b of every rank handles part b of every share. Every element of a rank's buffers is read, then
// written by one thread, so in place is safe. Generated code (codegen/direct_source.hpp, DirectSpec::inbox and
// two_shot) supplies the Config.
#pragma once

#include "canopy/direct_inbox.cuh"

namespace canopy {

// Whether rank `me` stores share-sized parts into rank `peer`'s inbox in shot A (its input's share `peer`) and in
// shot B (its own combined share).
template <typename C>
__device__ __forceinline__ bool inbox_shot_a(int me, int peer) {
  return me != peer && (C::kCollective != kDirectBroadcast || me == C::kRoot);
}
template <typename C>
__device__ __forceinline__ bool inbox_shot_b(int me, int peer) {
  if (me == peer) return false;
  if (C::kCollective == kDirectBroadcast) return peer != C::kRoot;
  if (C::kCollective == kDirectReduce) return peer == C::kRoot;
  return true;
}

// Part b of rank q's share of n elements (element_part, the shares of ranks 0, 1, ... one after another).
template <typename C>
__device__ __forceinline__ ElementPart inbox_part(unsigned long long n, int q, int b) {
  return element_part<typename C::T>(n, static_cast<unsigned long long>(q) * C::kBlocks + b,
                                     static_cast<unsigned long long>(C::kRanks) * C::kBlocks);
}

// The last step: part b of the shares the other ranks stored into my inbox (`inbox`, slots of `slot` elements), into
// my receive buffer. Its own function, so that the kernel holds little across shot B's call before it.
template <typename C>
__device__ __noinline__ void inbox_collect(typename C::T* out, const typename C::T* inbox, unsigned long long slot,
                                           unsigned long long n, int me, int b) {
  typedef typename C::T T;
  for (int k = 1; k < C::kRanks; ++k) {
    const int q = (me + k) % C::kRanks;
    if (!inbox_shot_b<C>(q, me)) continue;
    const ElementPart p = inbox_part<C>(n, q, b);
    Pointers<T, 1> d;
    Pointers<const T, 1> s;
    d.p[0] = out + p.first;
    s.p[0] = inbox + static_cast<unsigned long long>(q) * slot + p.first;
    reduce_copy<typename C::Op, T, 1, 1>(d, s, 1, p.length);
  }
}

template <typename C>
__device__ __forceinline__ void run_direct_inbox_two_shot_block(const typename C::Args& a, const volatile int& me,
                                                                int b, const volatile unsigned long long& e) {
  typedef typename C::T T;
  typedef typename C::Op Op;
  static_assert(C::kTwoShot && C::kPiece == 0, "the two-shot inbox kernels move whole parts");
  static_assert(C::kCollective == kDirectBroadcast || C::kCollective == kDirectReduce ||
                    C::kCollective == kDirectAllReduce,
                "two-shot inbox kernels are broadcast, reduce and allreduce");
  const unsigned long long n = a.count;
  const unsigned long long slot = inbox_slot<C>(n);
  auto first = [&](int q) { return inbox_part<C>(n, q, b).first; };
  auto length = [&](int q) { return inbox_part<C>(n, q, b).length; };
  const T* in = static_cast<const T*>(a.rank[me].send);
  T* out = static_cast<T*>(a.rank[me].recv);
  auto inbox = [&](int owner, int source, unsigned long long at) {
    return static_cast<T*>(a.rank[owner].scratch) + static_cast<unsigned long long>(source) * slot + at;
  };
  // Whether I store into q's inbox in shot 0 (A) or 1 (B), and whether q stores into mine.
  auto to = [&](unsigned long long shot, int q) {
    return shot == 0 ? inbox_shot_a<C>(me, q) : inbox_shot_b<C>(me, q);
  };
  auto from = [&](unsigned long long shot, int q) {
    return shot == 0 ? inbox_shot_a<C>(q, me) : inbox_shot_b<C>(q, me);
  };
  auto any = [&](unsigned long long shot, bool sending) {
    bool found = false;
    for (int q = 0; q < C::kRanks; ++q) found = found || (sending ? to(shot, q) : from(shot, q));
    return found;
  };
  // A shot's stores complete, told to the ranks that need them (inbox_post); until those storing to me told me so.
  auto post = [&](unsigned long long shot) {
    inbox_post<C>(a, me, b, inbox_done_mark<C>(e, shot), [&](int q) { return to(shot, q); });
  };
  auto await = [&](unsigned long long shot) {
    inbox_await<C>(a, me, b, inbox_done_mark<C>(e, shot), [&](int q) { return from(shot, q); });
  };

  // Entered: the ranks that store into my inbox (in either shot) may; wait until the ranks I store to have entered.
  direct_enter<C>(a, me, b, e, [](int storer, int owner) {
    return inbox_shot_a<C>(storer, owner) || inbox_shot_b<C>(storer, owner);
  });

  // Shot A: share q of my input into q's inbox, starting after myself so that ranks spread their stores over the
  // peers. The broadcast root also copies each share into its own receive buffer (unless in place): nobody sends it.
  if (any(0, true)) {
    for (int k = 1; k < C::kRanks; ++k) {
      const int q = (me + k) % C::kRanks;
      Pointers<T, 2> d;
      Pointers<const T, 1> s;
      s.p[0] = in + first(q);
      d.p[0] = inbox(q, me, first(q));
      d.p[1] = C::kCollective == kDirectBroadcast && out + first(q) != s.p[0] ? out + first(q) : nullptr;
      reduce_copy<Op, T, 1, 2>(d, s, 1, length(q));
    }
    post(0);
  }

  // Shot B: my share, combined in rank order (broadcast: the root's copy), into my receive buffer and the inboxes of
  // the ranks that need it.
  await(0);
  {
    Pointers<T, C::kRanks> d;
    Pointers<const T, C::kRanks> s;
    int sources = 1;
    if (C::kCollective == kDirectBroadcast) {
      s.p[0] = me == C::kRoot ? in + first(me) : inbox(me, C::kRoot, first(me));
    } else {
      sources = C::kRanks;
#pragma unroll
      for (int q = 0; q < C::kRanks; ++q) s.p[q] = q == me ? in + first(me) : inbox(me, q, first(me));
    }
#pragma unroll
    for (int k = 0; k < C::kRanks; ++k) {
      const int q = (me + 1 + k) % C::kRanks;
      d.p[k] = to(1, q) ? inbox(q, me, first(me)) : nullptr;
      // Mine: every rank's but a reduce's non-root's. In place, a combined share is read, then written, by one thread
      // an element; the broadcast root's is there already.
      if (q == me && (C::kCollective != kDirectReduce || me == C::kRoot))
        d.p[k] = C::kCollective == kDirectBroadcast && out + first(me) == s.p[0] ? nullptr : out + first(me);
    }
    reduce_copy<Op, T, C::kRanks, C::kRanks>(d, s, sources, length(me));
  }
  if (any(1, true)) post(1);

  // Last: the other ranks' shares I received, from my inbox into my receive buffer.
  if (!any(1, false)) return;
  await(1);
  inbox_collect<C>(out, inbox(me, 0, 0), slot, n, me, b);
}

// blockIdx.x = local rank k x C::kBlocks + block: rank ranks[k] of device `device`. The block's rank and epoch live in
// shared memory, read where used: held in registers across shot B's call of reduce_copy (every rank's pointers), they
// spilled around it for bf16 (tests/runtime/jit/generated_kernels_nvrtc_test.cpp). Every thread stores the same value,
// then reads its own store.
template <typename C>
__device__ __forceinline__ void run_direct_inbox_two_shot(const typename C::Args& a, const int* ranks, int device) {
  __shared__ unsigned long long e;
  __shared__ int me;
  e = begin_launch(a.launches[device], a.epoch, a.abort);
  me = ranks[blockIdx.x / C::kBlocks];
  run_direct_inbox_two_shot_block<C>(a, me, blockIdx.x % C::kBlocks, e);
  end_launch(a.launches[device], a.epoch, e);
}

}  // namespace canopy
