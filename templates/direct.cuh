// The direct protocol for mid-size messages: one launch per call in which every rank reads the inputs it needs
// straight from the other ranks' send buffers (peer loads over NVLink) and writes only its own receive buffer. No
// FIFO, no intermediate copy, no per-chunk counter: two handshakes per block and call. Block b of a rank first
// tells the ranks that read its input that they may ("entered": its stream has reached this call, so the input is
// ready) and waits for the same word from the ranks it reads; it then moves its share of the elements with
// reduce_copy (16-byte vectors, several in flight per thread); last it tells the ranks it read that it is done and
// waits until its own readers are, so the caller may overwrite its input once the launch ends. Block b of one
// rank pairs with block b of every other, so every block of every kernel waits for its readers. The counters
// carry the call's epoch and only grow. Contributions are combined in rank order on every rank. Generated code
// (codegen/direct_source.hpp) supplies the Config: element type, operator, collective, ranks, root, blocks per rank
// and which ranks each device runs.
//
// Allgather pushes instead: every rank stores its input into its block of every other rank's receive buffer, so
// there "entered" means "my receive buffer may be written" and "done" means "my stores into yours are complete";
// the handshakes are the same, as every pair of ranks is both.
//
// Two-shot (Config::kTwoShot) splits the elements into one share per rank, and rank r moves share r alone, in one
// pass: allreduce reads it from every rank's send buffer, combines it in rank order and stores the result into every
// rank's receive buffer (a reduce-scatter and an allgather); broadcast reads it from the root's and stores it into
// every receive buffer (a scatter and an allgather); reduce combines it from every send buffer into the root's
// receive buffer. No link then carries more than 2 (ranks - 1) / ranks of the buffer one way, where one-shot puts
// (ranks - 1) times it on the root's link (on every rank's for allreduce). Every pair of ranks may read and write
// each other, so the handshakes are allgather's, every pair both ways.
//
// In place is safe for every collective but one-shot allreduce, whose ranks read the buffer its owner overwrites:
// the runtime sends an in-place allreduce to the two-shot kernel, where each element of every rank's buffer is read
// and then written by one thread of its share's owner.
#pragma once

#include "canopy/device_args.cuh"
#include "canopy/flags.cuh"
#include "canopy/reduce_copy.cuh"

namespace canopy {

enum DirectCollective : int {
  kDirectBroadcast = 0,
  kDirectReduce = 1,
  kDirectAllReduce = 2,
  kDirectAllGather = 3,
  kDirectReduceScatter = 4
};

// Whether rank `me` reads rank `peer`'s send buffer in collective C::kCollective (allgather: writes its receive
// buffer; every pair of ranks does both, as in two-shot calls).
template <typename C>
__device__ __forceinline__ bool direct_reads(int me, int peer) {
  if (me == peer) return false;
  if (C::kTwoShot) return true;
  if (C::kCollective == kDirectBroadcast) return peer == C::kRoot;
  if (C::kCollective == kDirectReduce) return me == C::kRoot;
  return true;
}

// Counter indices in a rank's direct flag area: "peer entered" and "peer done reading", per peer and block.
template <typename C>
__device__ __forceinline__ int direct_entered(int peer, int b) {
  return peer * C::kBlocks + b;
}
template <typename C>
__device__ __forceinline__ int direct_done(int peer, int b) {
  return (C::kRanks + peer) * C::kBlocks + b;
}

// The "entered" step of block b of rank `me`, over the pairs a predicate picks (touches(q, p): rank q reads or stores
// into rank p's memory this launch). Tells the ranks that touch mine that they may (my stream has reached this launch,
// so my launch before is done with that memory) and waits for the same word from the ranks whose memory I touch.
template <typename C, typename Touches>
__device__ __forceinline__ void direct_enter(const typename C::Args& a, int me, int b, unsigned long long e,
                                             Touches touches) {
  if (leader()) {
    for (int q = 0; q < C::kRanks; ++q)
      if (touches(q, me)) store_release(flag(a.rank[q], direct_entered<C>(me, b)), e);
    for (int q = 0; q < C::kRanks; ++q)
      if (touches(me, q)) wait(flag(a.rank[me], direct_entered<C>(q, b)), e);
  }
  sync();
}

// Part `part` of `parts` of n elements of T: [first, first + length), whole 16-byte vectors for every part but the
// last, which also takes the tail. How every direct kernel cuts its elements among blocks (and ranks' shares).
struct ElementPart {
  unsigned long long first, length;
};
template <typename T>
__device__ __forceinline__ ElementPart element_part(unsigned long long n, unsigned long long part,
                                                    unsigned long long parts) {
  const unsigned long long vec = 16 / sizeof(T), vectors = n / vec;
  const unsigned long long first = vectors * part / parts * vec;
  return {first, (part + 1 == parts ? n : vectors * (part + 1) / parts * vec) - first};
}

template <typename C>
__device__ __forceinline__ void run_direct_block(const typename C::Args& a, int me, int b, unsigned long long e) {
  typedef typename C::T T;
  typedef typename C::Op Op;
  static_assert(!C::kTwoShot || C::kCollective == kDirectBroadcast || C::kCollective == kDirectReduce ||
                    C::kCollective == kDirectAllReduce,
                "two-shot direct kernels are broadcast, reduce and allreduce");
  const unsigned long long n = a.count;
  // Block b's elements (element_part). Two-shot splits the elements into kRanks x kBlocks parts, the shares of ranks
  // 0, 1, ... one after another.
  const bool two_shot = C::kTwoShot;
  const unsigned long long parts = two_shot ? C::kRanks * C::kBlocks : C::kBlocks;
  const unsigned long long part = two_shot ? static_cast<unsigned long long>(me) * C::kBlocks + b : b;
  const ElementPart mine = element_part<T>(n, part, parts);
  const unsigned long long first = mine.first, len = mine.length;

  // 1. Entered: my readers may read my input; wait until the ranks I read have entered too.
  direct_enter<C>(a, me, b, e, [](int reader, int owner) { return direct_reads<C>(reader, owner); });

  // 2. Move: my receive buffer from the send buffers, in rank order (allgather: my input into every receive buffer).
  T* out = static_cast<T*>(a.rank[me].recv);
  if (len > 0) {
    if (C::kCollective == kDirectAllGather) {
      // Pushed, not pulled: my input, read once, into block `me` of every rank's receive buffer, mine included
      // (stores to a peer need fewer bytes in flight than loads from it, and one pass keeps the local copy from
      // following the remote one).
      Pointers<T, C::kRanks> d;
      Pointers<const T, 1> s;
      s.p[0] = static_cast<const T*>(a.rank[me].send) + first;
#pragma unroll
      for (int k = 0; k < C::kRanks; ++k) {  // starting after myself, so ranks spread their stores over the peers
        const int q = (me + 1 + k) % C::kRanks;
        d.p[k] = static_cast<T*>(a.rank[q].recv) + static_cast<unsigned long long>(me) * n + first;
        if (q == me && d.p[k] == s.p[0]) d.p[k] = nullptr;  // in place: my block is already there
      }
      reduce_copy<Op, T, 1, C::kRanks>(d, s, 1, len);
    } else if (two_shot && C::kCollective == kDirectBroadcast) {
      // My part of the root's input into my part of every rank's receive buffer, starting after myself, so ranks
      // spread their stores over the peers.
      Pointers<T, C::kRanks> d;
      Pointers<const T, 1> s;
      s.p[0] = static_cast<const T*>(a.rank[C::kRoot].send) + first;
#pragma unroll
      for (int q = 0; q < C::kRanks; ++q) {
        d.p[q] = static_cast<T*>(a.rank[(me + 1 + q) % C::kRanks].recv) + first;
        if (d.p[q] == s.p[0]) d.p[q] = nullptr;  // the root in place: already there
      }
      reduce_copy<Op, T, 1, C::kRanks>(d, s, 1, len);
    } else if (two_shot) {
      // My part of every rank's input, combined in rank order, into my part of every rank's receive buffer (reduce:
      // the root's alone). Stores start after myself, so ranks spread them over the peers.
      constexpr int kDsts = C::kCollective == kDirectReduce ? 1 : C::kRanks;
      Pointers<T, kDsts> d;
      Pointers<const T, C::kRanks> s;
#pragma unroll
      for (int q = 0; q < C::kRanks; ++q) s.p[q] = static_cast<const T*>(a.rank[q].send) + first;
#pragma unroll
      for (int q = 0; q < kDsts; ++q)
        d.p[q] = static_cast<T*>(a.rank[kDsts == 1 ? C::kRoot : (me + 1 + q) % C::kRanks].recv) + first;
      reduce_copy<Op, T, C::kRanks, kDsts>(d, s, C::kRanks, len);
    } else if (C::kCollective == kDirectBroadcast) {
      Pointers<T, 1> d;
      Pointers<const T, 1> s;
      d.p[0] = out + first;
      s.p[0] = static_cast<const T*>(a.rank[C::kRoot].send) + first;
      if (d.p[0] != s.p[0]) reduce_copy<Op, T, 1, 1>(d, s, 1, len);
    } else if (C::kCollective != kDirectReduce || me == C::kRoot) {
      // allreduce, reduce-scatter (my block of every rank's input), reduce at the root
      const unsigned long long at = C::kCollective == kDirectReduceScatter ? static_cast<unsigned long long>(me) * n : 0;
      Pointers<T, 1> d;
      Pointers<const T, C::kRanks> s;
      d.p[0] = out + first;
#pragma unroll
      for (int q = 0; q < C::kRanks; ++q) s.p[q] = static_cast<const T*>(a.rank[q].send) + at + first;
      reduce_copy<Op, T, C::kRanks, 1>(d, s, C::kRanks, len);
    }
  }

  // 3. Done: the ranks I read may let their callers overwrite their input; wait until my readers are done with mine.
  __syncthreads();
  if (leader()) {
    // Allgather and two-shot store to peers; the others only read peers (their loads are done at the barrier). The
    // barrier orders every thread's stores before the leader's, and its system-scope release is cumulative: it
    // publishes them before the word that they are done. A full fence (__threadfence_system) before it ordered nothing
    // more and made allgather 2-7 % and two-shot allreduce 1-6 % slower at 2-64 MiB on two H200s
    // (bench/results/h200x2-direct-fence-ab.txt).
    for (int q = 0; q < C::kRanks; ++q)
      if (direct_reads<C>(me, q)) store_release(flag(a.rank[q], direct_done<C>(me, b)), e);
    for (int q = 0; q < C::kRanks; ++q)
      if (direct_reads<C>(q, me)) wait(flag(a.rank[me], direct_done<C>(q, b)), e);
  }
}

// blockIdx.x = local rank k x C::kBlocks + block: rank ranks[k] of device `device`.
template <typename C>
__device__ __forceinline__ void run_direct(const typename C::Args& a, const int* ranks, int device) {
  const unsigned long long e = begin_launch(a.launches[device], a.epoch, a.abort);
  run_direct_block<C>(a, ranks[blockIdx.x / C::kBlocks], blockIdx.x % C::kBlocks, e);
  end_launch(a.launches[device], a.epoch, e);
}

}  // namespace canopy
