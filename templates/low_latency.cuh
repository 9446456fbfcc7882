// The low-latency (LL) protocol for small messages: one launch per call, no handshake, no counters per chunk. Every
// rank stores its contribution into its peers' LL buffers 8 bytes at a time, each 4 bytes beside a copy of the
// launch's flag (16-byte lines: d0, flag, d1, flag; NCCL's LL), and a receiver spins on the flags of the very lines
// it reads, so data and "it has arrived" travel together. A rank's LL buffer holds two parities (launches alternate)
// x one slot per source rank; before refilling a parity a sender's block waits until the receiver has acknowledged
// the launch that last used it (its ack counter, one per peer and block, >= epoch - 2). A block acknowledges on
// entry: launch e starts after the GPU's launch e - 1 has ended (stream order), so every block of it has read its
// lines, and the ack of e - 1 needs no fence and no wait for the launch's own stores, where an ack at the end would
// wait for both (a system-scope fence behind the remote stores, then the ack's own round trip before the launch ends).
// Everything lives in communicator memory, so no rank waits for another to enter a launch. An allreduce is one-shot
// (every rank sends its whole input to every peer and combines them all) or, with C::kTwoShot, two-shot (a
// reduce-scatter then an allgather in the same launch: fewer bytes per rank from three ranks on, one more latency).
// Generated code (codegen/low_latency_source.hpp) supplies the Config: element type, operator, collective, ranks,
// root, blocks per rank, lines per slot, one- or two-shot and which ranks each device runs.
#pragma once

#include "canopy/device_args.cuh"
#include "canopy/dtypes.cuh"
#include "canopy/flags.cuh"

namespace canopy {

enum LLCollective : int { kLLBroadcast = 0, kLLReduce = 1, kLLAllReduce = 2, kLLAllGather = 3, kLLReduceScatter = 4 };

struct LLLine {
  unsigned int d0, f0, d1, f1;
};

// Both halves of a line carry the flag: a 16-byte store may land as two 8-byte halves.
__device__ __forceinline__ void ll_store(LLLine* p, unsigned long long data, unsigned int flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(static_cast<unsigned int>(data)),
               "r"(flag), "r"(static_cast<unsigned int>(data >> 32)), "r"(flag)
               : "memory");
}

__device__ __forceinline__ unsigned long long ll_load(const LLLine* p, unsigned int flag) {
  unsigned int d0, f0, d1, f1;
  unsigned spins = 0;
  do {
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
                 : "l"(p)
                 : "memory");
  } while ((f0 != flag || f1 != flag) && !give_up(spins));
  return (static_cast<unsigned long long>(d1) << 32) | d0;
}

// 8 bytes of elements: kPer = 8 / sizeof(T) of them.
template <typename T>
union LLGroup {
  unsigned long long bits;
  T e[8 / sizeof(T)];
};

// Elements [g * kPer, (g + 1) * kPer) of p, those below n (the rest zero).
template <typename T>
__device__ __forceinline__ unsigned long long ll_pack(const T* p, unsigned long long g, unsigned long long n) {
  constexpr int kPer = 8 / sizeof(T);
  LLGroup<T> u;
  u.bits = 0;
#pragma unroll
  for (int k = 0; k < kPer; ++k)
    if (g * kPer + k < n) u.e[k] = p[g * kPer + k];
  return u.bits;
}

// Stores the elements of `bits` into group g of p ([g * kPer, (g + 1) * kPer)), those below n only.
template <typename T>
__device__ __forceinline__ void ll_unpack(T* p, unsigned long long g, unsigned long long n, unsigned long long bits) {
  constexpr int kPer = 8 / sizeof(T);
  LLGroup<T> u;
  u.bits = bits;
#pragma unroll
  for (int k = 0; k < kPer; ++k)
    if (g * kPer + k < n) p[g * kPer + k] = u.e[k];
}

// Line g of `slot` in `parity` of a rank's LL buffer (C::kLines lines per slot, C::kRanks slots per parity).
template <typename C>
__device__ __forceinline__ LLLine* ll_line(void* buffer, unsigned long long parity, int slot, unsigned long long g) {
  return static_cast<LLLine*>(buffer) + ((parity * C::kRanks + slot) * C::kLines + g);
}

// Whether rank `me` sends to / receives from `peer` in collective C::kCollective (C::kRoot for broadcast, reduce).
template <typename C>
__device__ __forceinline__ bool ll_sends(int me, int peer) {
  if (me == peer) return false;
  if (C::kCollective == kLLBroadcast) return me == C::kRoot;
  if (C::kCollective == kLLReduce) return peer == C::kRoot;
  return true;
}
template <typename C>
__device__ __forceinline__ bool ll_receives(int me, int peer) {
  return ll_sends<C>(peer, me);
}

// Block `b` of rank `me` acknowledges the launches before this one to every peer (whether it sends to me in this
// collective or not: the next may differ). The parity this launch fills was last read two launches ago: the block
// waits until every receiver of its lines has acknowledged it, which it does on entering the launch after it. Ends
// with the block's barrier. Shared with the LL128 kernels (ll128.cuh), which count their own launches.
template <typename C>
__device__ __forceinline__ void ll_acknowledge(const typename C::Args& a, int me, int b, unsigned long long e) {
  if (leader()) {
    for (int q = 0; q < C::kRanks; ++q)
      if (q != me) store_release(flag(a.rank[q], me * C::kBlocks + b), e - 1);
    if (e > 2)
      for (int d = 0; d < C::kRanks; ++d)
        if (ll_sends<C>(me, d)) wait(flag(a.rank[me], d * C::kBlocks + b), e - 2);
  }
  sync();
}

// Block `b` of rank `me`: acks, push, receive and combine. Block b handles groups [G*b/B, G*(b+1)/B) of every
// slot, where a slot carries `n` elements (NCCL's count): G = ceil(n / kPer).
template <typename C>
__device__ __forceinline__ void run_ll_block(const typename C::Args& a, int me, int b, unsigned long long e) {
  typedef typename C::T T;
  typedef typename Elem<T>::Math M;
  constexpr int kPer = 8 / sizeof(T);
  const unsigned long long n = a.count;
  const unsigned long long groups = (n + kPer - 1) / kPer;
  const unsigned long long first = groups * b / C::kBlocks, last = groups * (b + 1) / C::kBlocks;
  const unsigned long long parity = e & 1;
  const unsigned int mark = static_cast<unsigned int>(e);  // the flag beside this launch's data
  const T* in = static_cast<const T*>(a.rank[me].send);
  T* out = static_cast<T*>(a.rank[me].recv);

  // 1. Acks (ll_acknowledge).
  ll_acknowledge<C>(a, me, b, e);

  // 2. Push: my contribution for each receiver into its slot `me`.
  for (int d = 0; d < C::kRanks; ++d) {
    if (!ll_sends<C>(me, d)) continue;
    const T* from = C::kCollective == kLLReduceScatter ? in + static_cast<unsigned long long>(d) * n : in;
    for (unsigned long long g = first + threadIdx.x; g < last; g += blockDim.x)
      ll_store(ll_line<C>(a.rank[d].scratch, parity, me, g), ll_pack(from, g, n), mark);
  }

  // 3. Receive and combine, element by element in the same thread that pushed (in place is safe).
  for (unsigned long long g = first + threadIdx.x; g < last; g += blockDim.x) {
    if (C::kCollective == kLLAllGather) {
      for (int q = 0; q < C::kRanks; ++q) {
        T* to = out + static_cast<unsigned long long>(q) * n;
        if (q == me && to == in) continue;  // in place: my block is already there
        ll_unpack(to, g, n, q == me ? ll_pack(in, g, n) : ll_load(ll_line<C>(a.rank[me].scratch, parity, q, g), mark));
      }
      continue;
    }
    const bool produces = C::kCollective == kLLAllReduce || C::kCollective == kLLReduceScatter ||
                          (C::kCollective == kLLReduce && me == C::kRoot) ||
                          (C::kCollective == kLLBroadcast && me != C::kRoot);
    if (!produces) {
      if (C::kCollective == kLLBroadcast && out != in) {  // the root's own copy, unless in place
#pragma unroll
        for (int k = 0; k < kPer; ++k)
          if (g * kPer + k < n) out[g * kPer + k] = in[g * kPer + k];
      }
      continue;
    }
    // Contributions in rank order on every rank, so every rank's floating-point result is the same bit for bit.
    M acc[kPer];
    bool have = false;
    for (int q = 0; q < C::kRanks; ++q) {
      LLGroup<T> u;
      if (q == me && C::kCollective != kLLBroadcast)
        u.bits = ll_pack(C::kCollective == kLLReduceScatter ? in + static_cast<unsigned long long>(me) * n : in, g, n);
      else if (ll_receives<C>(me, q))
        u.bits = ll_load(ll_line<C>(a.rank[me].scratch, parity, q, g), mark);
      else
        continue;
#pragma unroll
      for (int k = 0; k < kPer; ++k)
        acc[k] = have ? C::Op::apply(acc[k], Elem<T>::in(u.e[k])) : Elem<T>::in(u.e[k]);
      have = true;
    }
#pragma unroll
    for (int k = 0; k < kPer; ++k)
      if (g * kPer + k < n) out[g * kPer + k] = Elem<T>::out(acc[k]);
  }
}

// The groups of share q (rank q reduces it in a two-shot allreduce) that block b of every rank handles:
// [*first, *last). Share q is groups [G*q/R, G*(q+1)/R).
template <typename C>
__device__ __forceinline__ void ll_share_part(unsigned long long groups, int q, int b, unsigned long long* first,
                                              unsigned long long* last) {
  const unsigned long long s0 = groups * q / C::kRanks, s1 = groups * (q + 1) / C::kRanks;
  *first = s0 + (s1 - s0) * b / C::kBlocks;
  *last = s0 + (s1 - s0) * (b + 1) / C::kBlocks;
}

// The two-shot allreduce (C::kTwoShot): a reduce-scatter and an allgather in one launch, each rank sending
// 2 (R - 1) / R of the buffer where the one-shot sends (R - 1) times it, for one more one-way latency. Block b of
// rank `me`: (1) pushes share d of its input to every rank d; (2) combines its share in rank order from its input
// and the lines of every peer, writes it out and pushes the result to every peer; (3) copies every other share from
// the line its owner pushed. A rank's slot q holds share `me` from q in (1) and share q from q in (2): other lines,
// so one parity per launch still suffices, every line written once. Every rank's result is the same bit for bit.
// The same thread handles a group in every step (in place is safe: a group is read before it is written).
template <typename C>
__device__ __forceinline__ void run_ll_two_shot_block(const typename C::Args& a, int me, int b,
                                                      unsigned long long e) {
  typedef typename C::T T;
  typedef typename Elem<T>::Math M;
  constexpr int kPer = 8 / sizeof(T);
  const unsigned long long n = a.count;
  const unsigned long long groups = (n + kPer - 1) / kPer;
  const unsigned long long parity = e & 1;
  const unsigned int mark = static_cast<unsigned int>(e);
  const T* in = static_cast<const T*>(a.rank[me].send);
  T* out = static_cast<T*>(a.rank[me].recv);
  unsigned long long first, last;

  ll_acknowledge<C>(a, me, b, e);

  // 1. Reduce-scatter's push: share d of my input into rank d's slot `me`.
  for (int d = 0; d < C::kRanks; ++d) {
    if (d == me) continue;
    ll_share_part<C>(groups, d, b, &first, &last);
    for (unsigned long long g = first + threadIdx.x; g < last; g += blockDim.x)
      ll_store(ll_line<C>(a.rank[d].scratch, parity, me, g), ll_pack(in, g, n), mark);
  }

  // 2. My share, in rank order; out, and into every peer's slot `me`.
  ll_share_part<C>(groups, me, b, &first, &last);
  for (unsigned long long g = first + threadIdx.x; g < last; g += blockDim.x) {
    M acc[kPer];
    for (int q = 0; q < C::kRanks; ++q) {
      LLGroup<T> u;
      u.bits = q == me ? ll_pack(in, g, n) : ll_load(ll_line<C>(a.rank[me].scratch, parity, q, g), mark);
#pragma unroll
      for (int k = 0; k < kPer; ++k) acc[k] = q > 0 ? C::Op::apply(acc[k], Elem<T>::in(u.e[k])) : Elem<T>::in(u.e[k]);
    }
    LLGroup<T> r;
#pragma unroll
    for (int k = 0; k < kPer; ++k) r.e[k] = Elem<T>::out(acc[k]);
    for (int d = 0; d < C::kRanks; ++d)
      if (d != me) ll_store(ll_line<C>(a.rank[d].scratch, parity, me, g), r.bits, mark);
    ll_unpack(out, g, n, r.bits);
  }

  // 3. Allgather's receive: share q from rank q's line.
  for (int q = 0; q < C::kRanks; ++q) {
    if (q == me) continue;
    ll_share_part<C>(groups, q, b, &first, &last);
    for (unsigned long long g = first + threadIdx.x; g < last; g += blockDim.x)
      ll_unpack(out, g, n, ll_load(ll_line<C>(a.rank[me].scratch, parity, q, g), mark));
  }
}

// blockIdx.x = local rank k x C::kBlocks + block: rank ranks[k] of device `device`.
template <typename C>
__device__ __forceinline__ void run_ll(const typename C::Args& a, const int* ranks, int device) {
  const unsigned long long e = begin_launch(a.launches[device], a.epoch, a.abort);
  if (C::kCollective == kLLAllReduce && C::kTwoShot)
    run_ll_two_shot_block<C>(a, ranks[blockIdx.x / C::kBlocks], blockIdx.x % C::kBlocks, e);
  else
    run_ll_block<C>(a, ranks[blockIdx.x / C::kBlocks], blockIdx.x % C::kBlocks, e);
  end_launch(a.launches[device], a.epoch, e);
}

}  // namespace canopy
