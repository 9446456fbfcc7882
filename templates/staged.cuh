// The staged protocol for mid-size messages: one launch per call in which every rank stores what each peer needs
// into that peer's staging buffer (communicator memory, two parities), then combines what its peers stored into its
// own receive buffer. Unlike the direct protocol (direct.cuh) no rank touches another rank's send or receive buffer,
// so no rank waits for another to enter the launch or to finish it: a sender's block only checks that the receiver
// acknowledged the launch that last used this parity (two launches back, normally long done), and a receiver waits
// for each chunk's "ready" counter, which its sender posts after the chunk's stores. One one-way latency per call
// instead of three. Each block moves an equal share of the elements in kChunks chunks and receives chunk c - 1
// while its stores of chunk c are in flight. Contributions are combined in rank order on every rank. Generated code
// (codegen/staged_source.hpp) supplies the Config: element type, operator, collective, ranks, root, blocks per rank,
// chunks per block, the slot size and which ranks each device runs.
//
// Layout of a rank's staging buffer: [parity][sender] slots of kSlotBytes. Its counters: "ready" per sender, block
// and chunk, then "acknowledged" per receiver and block (staged_source.hpp names the indices). Counters carry the
// launch's epoch and only grow.
#pragma once

#include "canopy/device_args.cuh"
#include "canopy/flags.cuh"
#include "canopy/reduce_copy.cuh"

namespace canopy {

enum StagedCollective : int {
  kStagedBroadcast = 0,
  kStagedReduce = 1,
  kStagedAllReduce = 2,
  kStagedAllGather = 3,
  kStagedReduceScatter = 4
};

// Whether rank `me` stores data for rank `peer` in collective C::kCollective.
template <typename C>
__device__ __forceinline__ bool staged_sends(int me, int peer) {
  if (me == peer) return false;
  if (C::kCollective == kStagedBroadcast) return me == C::kRoot;
  if (C::kCollective == kStagedReduce) return peer == C::kRoot;
  return true;
}
template <typename C>
__device__ __forceinline__ bool staged_receives(int me, int peer) {
  return staged_sends<C>(peer, me);
}

template <typename C>
__device__ __forceinline__ int staged_ready(int sender, int b, int c) {
  return (sender * C::kBlocks + b) * C::kChunks + c;
}
template <typename C>
__device__ __forceinline__ int staged_ack(int receiver, int b) {
  return C::kRanks * C::kBlocks * C::kChunks + receiver * C::kBlocks + b;
}

// Sender `q`'s slot of `parity` in a rank's staging buffer.
template <typename C, typename T>
__device__ __forceinline__ T* staged_slot(void* staging, unsigned long long parity, int q) {
  return reinterpret_cast<T*>(static_cast<char*>(staging) +
                              (parity * C::kRanks + static_cast<unsigned long long>(q)) * C::kSlotBytes);
}

template <typename C>
__device__ __forceinline__ void run_staged_block(const typename C::Args& a, int me, int b) {
  typedef typename C::T T;
  typedef typename C::Op Op;
  const unsigned long long n = a.count, e = a.epoch, parity = e & 1;
  // Block b's elements, then chunk c of them: whole 16-byte vectors but for the block's last chunk.
  const unsigned long long vec = 16 / sizeof(T), vectors = n / vec;
  const unsigned long long first = vectors * b / C::kBlocks * vec;
  const unsigned long long last = b + 1 == C::kBlocks ? n : vectors * (b + 1) / C::kBlocks * vec;
  const unsigned long long block_vectors = (last - first) / vec;
  const T* in = static_cast<const T*>(a.rank[me].send);
  T* out = static_cast<T*>(a.rank[me].recv);

  // 1. The parity this launch fills was last read two launches ago: wait until every receiver acknowledged it.
  if (leader() && e > 2)
    for (int d = 0; d < C::kRanks; ++d)
      if (staged_sends<C>(me, d)) wait(flag(a.rank[me], staged_ack<C>(d, b)), e - 2);
  sync();

  for (int c = 0; c <= C::kChunks; ++c) {
    // 2. Chunk c: my data for each receiver into its slot `me`, then its ready counter.
    if (c < C::kChunks) {
      const unsigned long long lo = first + block_vectors * c / C::kChunks * vec;
      const unsigned long long hi = c + 1 == C::kChunks ? last : first + block_vectors * (c + 1) / C::kChunks * vec;
      bool sent = false;
      for (int d = 0; d < C::kRanks; ++d) {
        if (!staged_sends<C>(me, d)) continue;
        Pointers<T, 1> to;
        Pointers<const T, 1> from;
        to.p[0] = staged_slot<C, T>(a.rank[d].scratch, parity, me) + lo;
        from.p[0] = (C::kCollective == kStagedReduceScatter ? in + static_cast<unsigned long long>(d) * n : in) + lo;
        if (hi > lo) reduce_copy<Op, T, 1, 1>(to, from, 1, hi - lo);
        sent = true;
      }
      if (sent) {
        __syncthreads();
        if (leader()) {
          __threadfence_system();  // every thread's stores to the slots before the counters that announce them
          for (int d = 0; d < C::kRanks; ++d)
            if (staged_sends<C>(me, d)) store_release(flag(a.rank[d], staged_ready<C>(me, b, c)), e);
        }
      }
    }
    // 3. Chunk c - 1: once every sender posted it, my receive buffer from the slots (and my own input).
    if (c == 0) continue;
    const int k = c - 1;
    const unsigned long long lo = first + block_vectors * k / C::kChunks * vec;
    const unsigned long long hi = k + 1 == C::kChunks ? last : first + block_vectors * (k + 1) / C::kChunks * vec;
    if (leader())
      for (int q = 0; q < C::kRanks; ++q)
        if (staged_receives<C>(me, q)) wait(flag(a.rank[me], staged_ready<C>(q, b, k)), e);
    sync();
    if (hi <= lo) continue;
    if (C::kCollective == kStagedAllGather) {
      for (int q = 0; q < C::kRanks; ++q) {
        Pointers<T, 1> to;
        Pointers<const T, 1> from;
        to.p[0] = out + static_cast<unsigned long long>(q) * n + lo;
        from.p[0] = (q == me ? in : staged_slot<C, T>(a.rank[me].scratch, parity, q)) + lo;
        if (to.p[0] != from.p[0]) reduce_copy<Op, T, 1, 1>(to, from, 1, hi - lo);  // in place: mine is there
      }
    } else if (C::kCollective == kStagedBroadcast) {
      Pointers<T, 1> to;
      Pointers<const T, 1> from;
      to.p[0] = out + lo;
      from.p[0] = (me == C::kRoot ? in : staged_slot<C, T>(a.rank[me].scratch, parity, C::kRoot)) + lo;
      if (to.p[0] != from.p[0]) reduce_copy<Op, T, 1, 1>(to, from, 1, hi - lo);
    } else if (C::kCollective != kStagedReduce || me == C::kRoot) {
      // allreduce, reduce-scatter (my block of my own input), reduce at the root: every rank's part in rank order
      Pointers<T, 1> to;
      Pointers<const T, C::kRanks> from;
      to.p[0] = out + lo;
#pragma unroll
      for (int q = 0; q < C::kRanks; ++q)
        from.p[q] = (q == me ? (C::kCollective == kStagedReduceScatter ? in + static_cast<unsigned long long>(me) * n
                                                                        : in)
                             : staged_slot<C, T>(a.rank[me].scratch, parity, q)) +
                    lo;
      reduce_copy<Op, T, C::kRanks, 1>(to, from, C::kRanks, hi - lo);
    }
  }

  // 4. Done reading this launch's slots: tell every peer, whether it sent or not, so acknowledgements never fall
  // behind (a later launch of another collective may send where this one did not).
  __syncthreads();
  if (leader()) {
    __threadfence_system();
    for (int q = 0; q < C::kRanks; ++q)
      if (q != me) store_release(flag(a.rank[q], staged_ack<C>(me, b)), e);
  }
}

// blockIdx.x = local rank k x C::kBlocks + block: rank ranks[k] of this device.
template <typename C>
__device__ __forceinline__ void run_staged(const typename C::Args& a, const int* ranks) {
  run_staged_block<C>(a, ranks[blockIdx.x / C::kBlocks], blockIdx.x % C::kBlocks);
}

}  // namespace canopy
