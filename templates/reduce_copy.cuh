// reduce_copy: the one data-moving primitive. A thread block reads kSrcs sources, combines them element-wise with
// Op, and stores the result to kDsts destinations (local or a peer's memory over NVLink/PCIe P2P). 16-byte
// vectors, coalesced, kUnroll vectors in flight per thread and source; a scalar path handles unaligned pointers
// and the tail (a plain copy there moves bits, as the vectors do). A null destination is skipped (an in-place root's
// own buffer).
#pragma once

#include "canopy/dtypes.cuh"

namespace canopy {

struct V16 {
  unsigned int x, y, z, w;
};

// Loads bypass L1 (.cg): FIFO slots and receive buffers are rewritten by peers between reads.
__device__ __forceinline__ V16 load_v16(const void* p) {
  V16 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void store_v16(void* p, V16 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" : : "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

template <typename T>
union Pack16 {
  V16 v;
  T e[16 / sizeof(T)];
};

template <typename Op, typename T>
__device__ __forceinline__ V16 combine(V16 a, V16 b) {
  Pack16<T> x, y;
  x.v = a;
  y.v = b;
#pragma unroll
  for (int k = 0; k < int(16 / sizeof(T)); ++k)
    x.e[k] = Elem<T>::out(Op::apply(Elem<T>::in(x.e[k]), Elem<T>::in(y.e[k])));
  return x.v;
}

template <int kBytes>
struct Bits;
template <>
struct Bits<1> {
  typedef unsigned char type;
};
template <>
struct Bits<2> {
  typedef unsigned short type;
};
template <>
struct Bits<4> {
  typedef unsigned int type;
};
template <>
struct Bits<8> {
  typedef unsigned long long type;
};

// A scalar load that cannot be served from a stale L1 line (the tail of a peer-written buffer).
template <typename T>
__device__ __forceinline__ T load_scalar(const T* p) {
  typedef typename Bits<sizeof(T)>::type B;
  union {
    B b;
    T t;
  } u;
  u.b = *reinterpret_cast<const volatile B*>(p);
  return u.t;
}

template <typename T, int K>
struct Pointers {
  T* p[K];
};

// dst[d][j] = src[0][j] (Op) src[1][j] (Op) ... (Op) src[sources-1][j] for j < n, by every thread of the block,
// for every non-null dst[d]. kSrcs and kDsts bound the counts at compile time, so the loops unroll and the
// pointers stay in registers (they travel by value); a schedule needs two instances: its widest copy
// (1 source) and its widest reduction (1 destination).
template <typename Op, typename T, int kSrcs, int kDsts>
__device__ __noinline__ void reduce_copy(Pointers<T, kDsts> dst, Pointers<const T, kSrcs> src, int sources,
                                         unsigned long long n) {
  // Four vectors in flight per thread and source; two where a reduction of 3 or more sources widens 1-byte elements
  // to floats (fp8), whose 16 conversions per vector would otherwise spill registers under 512 threads a block.
  const int kUnroll = sizeof(T) == 1 && sizeof(typename Elem<T>::Math) == 4 && kSrcs >= 3 ? 2 : 4;
  const unsigned long long kVec = 16 / sizeof(T);
  unsigned long long misaligned = 0;
#pragma unroll
  for (int s = 0; s < kSrcs; ++s)
    if (s < sources) misaligned |= reinterpret_cast<unsigned long long>(src.p[s]);
#pragma unroll
  for (int d = 0; d < kDsts; ++d) misaligned |= reinterpret_cast<unsigned long long>(dst.p[d]);
  unsigned long long done = 0;
  if ((misaligned & 15) == 0) {
    // kUnroll vectors per thread in flight; the last round is predicated.
    const unsigned long long vectors = n / kVec;
    const unsigned long long stride = blockDim.x;
    for (unsigned long long v = threadIdx.x; v < vectors; v += kUnroll * stride) {
      V16 acc[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (v + u * stride < vectors) acc[u] = load_v16(src.p[0] + (v + u * stride) * kVec);
#pragma unroll
      for (int s = 1; s < kSrcs; ++s) {
        if (s >= sources) break;
        V16 in[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
          if (v + u * stride < vectors) in[u] = load_v16(src.p[s] + (v + u * stride) * kVec);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) acc[u] = combine<Op, T>(acc[u], in[u]);
      }
#pragma unroll
      for (int d = 0; d < kDsts; ++d) {
        if (dst.p[d] == nullptr) continue;
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
          if (v + u * stride < vectors) store_v16(dst.p[d] + (v + u * stride) * kVec, acc[u]);
      }
    }
    done = vectors * kVec;
  }
  if (sources == 1) {
    // A copy moves bits, as the vectors above do: through Elem<T>::Math it would rewrite the payloads of 16- and 8-bit
    // floats' NaNs (bf16 0xFFF2 came back 0x7FFF), which a collective of raw bytes (an all-to-all of bf16) must keep.
    for (unsigned long long j = done + threadIdx.x; j < n; j += blockDim.x) {
      const T out = load_scalar(src.p[0] + j);
#pragma unroll
      for (int d = 0; d < kDsts; ++d)
        if (dst.p[d] != nullptr) dst.p[d][j] = out;
    }
    return;
  }
  for (unsigned long long j = done + threadIdx.x; j < n; j += blockDim.x) {
    typename Elem<T>::Math acc = Elem<T>::in(load_scalar(src.p[0] + j));
#pragma unroll
    for (int s = 1; s < kSrcs; ++s)
      if (s < sources) acc = Op::apply(acc, Elem<T>::in(load_scalar(src.p[s] + j)));
    const T out = Elem<T>::out(acc);
#pragma unroll
    for (int d = 0; d < kDsts; ++d)
      if (dst.p[d] != nullptr) dst.p[d][j] = out;
  }
}

// reduce_copy over pointer arrays of `sources` and `destinations` entries (the schedule executor's form).
template <typename Op, typename T, int kSrcs, int kDsts>
__device__ __forceinline__ void reduce_copy_n(T* const* dst, int destinations, const T* const* src, int sources,
                                              unsigned long long n) {
  Pointers<T, kDsts> d;
  Pointers<const T, kSrcs> s;
#pragma unroll
  for (int k = 0; k < kDsts; ++k) d.p[k] = k < destinations ? dst[k] : nullptr;
#pragma unroll
  for (int k = 0; k < kSrcs; ++k) s.p[k] = k < sources ? src[k] : nullptr;
  reduce_copy<Op, T, kSrcs, kDsts>(d, s, sources, n);
}

}  // namespace canopy
