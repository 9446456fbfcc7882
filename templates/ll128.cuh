// The LL128 protocol for mid-size messages: the low-latency protocol (low_latency.cuh) with 128-byte lines of 120 data
// bytes and an 8-byte flag, where LL's 16-byte lines carry 8 (NCCL's LL128). Eight threads of a warp write a line
// with one 16-byte store each in the same instruction, the eighth storing the flag beside its last data word, and
// read it the same way. A warp's store of whole 128-byte lines crosses NVLink as whole lines, and a warp's loads of
// one line are served from one line, so a reader whose flag word carries this launch's flag has the line's data
// from the same load. That is the hardware's behaviour on NVLink, not a PTX guarantee: NCCL relies on it on NVLink
// and NVSwitch since Volta, and so the runtime takes this protocol only between GPUs one NVLink hop apart (and on one
// GPU's virtual ranks). No handshake and no fence per call: one one-way latency, where the direct protocol waits
// for three, at 94% of the bytes on the wire, where LL carries 50%.
//
// Flow control and memory are LL's: a rank's LL128 buffer holds two parities (launches alternate) x one slot per
// source rank; blocks acknowledge the launch before on entry (ll_acknowledge), and a sender refills a parity once
// its receivers have acknowledged the launch two back. The LL128 kernels count their own launches. Generated code
// (codegen/ll128_source.hpp) supplies the Config: element type, operator, collective (LL's enumerators), ranks, root,
// blocks per rank, lines per slot and which ranks each device runs.
#pragma once

#include "canopy/low_latency.cuh"

namespace canopy {

constexpr int kLL128Words = 15;  // data words of 8 bytes per line; the 16th is the flag
// A warp moves rounds of 4 x U lines (4 lines per instruction, one per 8 threads), U lines per thread in flight.
// Pushing holds only the words: 8. Receiving holds a sum per element too: 4, or 2 for 1-byte elements (8 registers a
// word).
constexpr int kLL128PushUnroll = 8;
template <typename T>
__device__ __forceinline__ constexpr int ll128_unroll() {
  return sizeof(T) == 1 ? 2 : 4;
}

// Line `line` of `slot` in `parity` of a rank's LL128 buffer: 16 words, C::kLines lines per slot, C::kRanks slots.
template <typename C>
__device__ __forceinline__ u64* ll128_line(void* buffer, u64 parity, int slot, u64 line) {
  return static_cast<u64*>(buffer) + ((parity * C::kRanks + slot) * C::kLines + line) * 16;
}

__device__ __forceinline__ void ll128_store(u64* p, u64 w0, u64 w1) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(w0), "l"(w1) : "memory");
}

__device__ __forceinline__ void ll128_load(const u64* p, u64& w0, u64& w1) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(w0), "=l"(w1) : "l"(p) : "memory");
}

__device__ __forceinline__ bool aligned8(const void* p) { return (reinterpret_cast<u64>(p) & 7) == 0; }

// Data word g (elements [g * kPer, (g + 1) * kPer) of p, those below n, the rest zero): one 8-byte load when whole
// and aligned.
template <typename T>
__device__ __forceinline__ u64 ll128_get(const T* p, u64 g, u64 n, bool aligned) {
  constexpr u64 kPer = 8 / sizeof(T);
  if (aligned && (g + 1) * kPer <= n) return *reinterpret_cast<const u64*>(p + g * kPer);
  return ll_pack(p, g, n);
}

// Stores data word g into p, the elements below n only: one 8-byte store when whole and aligned.
template <typename T>
__device__ __forceinline__ void ll128_put(T* p, u64 g, u64 n, bool aligned, u64 bits) {
  constexpr u64 kPer = 8 / sizeof(T);
  if (aligned && (g + 1) * kPer <= n)
    *reinterpret_cast<u64*>(p + g * kPer) = bits;
  else
    ll_unpack(p, g, n, bits);
}

// A warp's lines in a round starting at `base`: thread t holds words 2 (t % 8) and 2 (t % 8) + 1 of line
// base + 4 u + (t % 32) / 8 for u < U; the words of thread 7 of each eight are its last data word and the
// flag.
__device__ __forceinline__ u64 ll128_round_line(u64 base, int u) { return base + 4 * u + ((threadIdx.x & 31) >> 3); }
__device__ __forceinline__ int ll128_lane() { return threadIdx.x & 7; }

// The warp's lines of this round from `slot` of my buffer (those below `last`) into v, once each carries `mark`:
// every eight threads reload their line together until the flag their eighth loaded is this launch's.
template <typename C, int U>
__device__ __forceinline__ void ll128_receive(void* buffer, u64 parity, int slot, u64 base, u64 last, u64 mark,
                                              u64 (&v)[U][2]) {
  const int lane = threadIdx.x & 31;
  const u64* p[U];
  bool ready[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const u64 line = ll128_round_line(base, u);
    ready[u] = line >= last;
    p[u] = ll128_line<C>(buffer, parity, slot, ready[u] ? 0 : line) + 2 * ll128_lane();
    v[u][0] = v[u][1] = 0;
  }
  unsigned spins = 0;
  for (;;) {
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (!ready[u]) ll128_load(p[u], v[u][0], v[u][1]);
    bool all = true;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const u64 f = __shfl_sync(0xffffffffu, v[u][1], lane | 7);
      ready[u] = ready[u] || f == mark;
      all = all && ready[u];
    }
    if (__all_sync(0xffffffffu, all)) return;
    if ((++spins % kAbortPolls) == 0 && __any_sync(0xffffffffu, aborted())) return;  // the warp gives up together
  }
}

// The data words of the warp's lines in the round at `base` (those below `last`) read from p, which holds n elements.
template <typename T, int U>
__device__ __forceinline__ void ll128_read_round(const T* p, u64 base, u64 last, u64 n, u64 (&v)[U][2]) {
  const bool aligned = aligned8(p);
  const u64 j = ll128_lane();
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const u64 line = ll128_round_line(base, u);
    const u64 g = (line < last ? line : last) * kLL128Words + 2 * j;  // past `last`: nothing to read
    v[u][0] = line < last ? ll128_get(p, g, n, aligned) : 0;
    v[u][1] = line < last && j < 7 ? ll128_get(p, g + 1, n, aligned) : 0;
  }
}

// Writes the data words of the warp's lines in the round at `base` (those below `last`) into p (n elements).
template <typename T, int U>
__device__ __forceinline__ void ll128_write_round(T* p, u64 base, u64 last, u64 n, const u64 (&v)[U][2]) {
  const bool aligned = aligned8(p);
  const u64 j = ll128_lane();
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const u64 line = ll128_round_line(base, u);
    if (line >= last) continue;
    const u64 g = line * kLL128Words + 2 * j;
    ll128_put(p, g, n, aligned, v[u][0]);
    if (j < 7) ll128_put(p, g + 1, n, aligned, v[u][1]);
  }
}

// Block `b` of rank `me`: acks, push, receive and combine. Block b handles lines [L*b/B, L*(b+1)/B) of every slot,
// where a slot carries `n` elements (NCCL's count) in L = ceil(ceil(n / kPer) / 15) lines; its warps take rounds of
// 4 x P lines in turn to push and of 4 x U to receive.
template <typename C>
__device__ __forceinline__ void run_ll128_block(const typename C::Args& a, int me, int b, u64 e) {
  typedef typename C::T T;
  typedef typename Elem<T>::Math M;
  constexpr int kPer = 8 / sizeof(T);
  constexpr int U = ll128_unroll<T>(), P = kLL128PushUnroll;
  const u64 n = a.count;
  const u64 lines = ((n + kPer - 1) / kPer + kLL128Words - 1) / kLL128Words;
  const u64 first = lines * b / C::kBlocks, last = lines * (b + 1) / C::kBlocks;
  const u64 parity = e & 1;
  const int j = ll128_lane();
  const u64 warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const T* in = static_cast<const T*>(a.rank[me].send);
  T* out = static_cast<T*>(a.rank[me].recv);

  ll_acknowledge<C>(a, me, b, e);

  // 2. Push: my contribution for each receiver into its slot `me`, 16 bytes per thread and line. The broadcast root's
  // own copy and my block of an allgather's output ride along with the first receiver's lines, so the input is read
  // once (with one rank nothing is pushed, and the receive phase copies).
  T* const own = C::kCollective == kLLAllGather ? out + static_cast<u64>(me) * n : out;
  bool copy_own = ((C::kCollective == kLLBroadcast && me == C::kRoot) || C::kCollective == kLLAllGather) && own != in;
  for (int d = 0; d < C::kRanks; ++d) {
    if (!ll_sends<C>(me, d)) continue;
    const T* from = C::kCollective == kLLReduceScatter ? in + static_cast<u64>(d) * n : in;
    for (u64 base = first + warp * 4 * P; base < last; base += warps * 4 * P) {
      u64 v[P][2];
      ll128_read_round(from, base, last, n, v);
      if (j == 7)
#pragma unroll
        for (int u = 0; u < P; ++u) v[u][1] = e;
      __syncwarp();  // a line's eight stores leave in one instruction
#pragma unroll
      for (int u = 0; u < P; ++u) {
        const u64 line = ll128_round_line(base, u);
        if (line < last) ll128_store(ll128_line<C>(a.rank[d].scratch, parity, me, line) + 2 * j, v[u][0], v[u][1]);
      }
      if (copy_own) ll128_write_round(own, base, last, n, v);
    }
    copy_own = false;
  }
  // Pushed in rounds of another size than received: in place, every read of my input comes before a write.
  __syncthreads();

  // 3. Receive and combine, in rounds of 4 x R lines: sums need registers per element, copies only the words.
  constexpr int R = C::kCollective == kLLBroadcast || C::kCollective == kLLAllGather ? P : U;
  const bool produces = C::kCollective != kLLReduce || me == C::kRoot;
  if (!produces) return;
  for (u64 base = first + warp * 4 * R; base < last; base += warps * 4 * R) {
    u64 v[R][2];
    if (C::kCollective == kLLAllGather) {
      for (int q = 0; q < C::kRanks; ++q) {
        T* to = out + static_cast<u64>(q) * n;
        if (q == me && (to == in || C::kRanks > 1)) continue;  // in place, or copied while pushing
        if (q == me)
          ll128_read_round(in, base, last, n, v);
        else
          ll128_receive<C, R>(a.rank[me].scratch, parity, q, base, last, e, v);
        ll128_write_round(to, base, last, n, v);
      }
      continue;
    }
    if (C::kCollective == kLLBroadcast) {  // the root's words as they are (the root's copy: unless in place or pushed)
      if (me == C::kRoot && (out == in || C::kRanks > 1)) return;
      if (me == C::kRoot)
        ll128_read_round(in, base, last, n, v);
      else
        ll128_receive<C, R>(a.rank[me].scratch, parity, C::kRoot, base, last, e, v);
      ll128_write_round(out, base, last, n, v);
      continue;
    }
    // Contributions in rank order on every rank, so every rank's floating-point result is the same bit for bit.
    // My own words are loaded first, so their loads overlap the wait for the peers' lines.
    M acc[R][2][kPer];
    u64 mine[R][2];
    ll128_read_round(C::kCollective == kLLReduceScatter ? in + static_cast<u64>(me) * n : in, base, last, n, mine);
    bool have = false;
    for (int q = 0; q < C::kRanks; ++q) {
      if (q == me)
#pragma unroll
        for (int u = 0; u < R; ++u) v[u][0] = mine[u][0], v[u][1] = mine[u][1];
      else if (ll_receives<C>(me, q))
        ll128_receive<C, R>(a.rank[me].scratch, parity, q, base, last, e, v);
      else
        continue;
#pragma unroll
      for (int u = 0; u < R; ++u)
#pragma unroll
        for (int w = 0; w < 2; ++w) {
          LLGroup<T> x;
          x.bits = v[u][w];
#pragma unroll
          for (int k = 0; k < kPer; ++k)
            acc[u][w][k] = have ? C::Op::apply(acc[u][w][k], Elem<T>::in(x.e[k])) : Elem<T>::in(x.e[k]);
        }
      have = true;
    }
#pragma unroll
    for (int u = 0; u < R; ++u)
#pragma unroll
      for (int w = 0; w < 2; ++w) {
        LLGroup<T> x;
#pragma unroll
        for (int k = 0; k < kPer; ++k) x.e[k] = Elem<T>::out(acc[u][w][k]);
        v[u][w] = x.bits;
      }
    ll128_write_round(out, base, last, n, v);
  }
}

// blockIdx.x = local rank k x C::kBlocks + block: rank ranks[k] of device `device`.
template <typename C>
__device__ __forceinline__ void run_ll128(const typename C::Args& a, const int* ranks, int device) {
  const u64 e = begin_launch(a.launches[device], a.epoch, a.abort);
  run_ll128_block<C>(a, ranks[blockIdx.x / C::kBlocks], blockIdx.x % C::kBlocks, e);
  end_launch(a.launches[device], a.epoch, e);
}

}  // namespace canopy
