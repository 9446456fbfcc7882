// Flags: monotonically increasing 64-bit counters in GPU memory that order the data moves between ranks.
// A value is (epoch << 32) | step. A block's leader thread spins and posts; the others meet it at a barrier.
#pragma once

#include "canopy/device_args.cuh"

namespace canopy {

typedef unsigned long long u64;

// The counter `index` of a rank's flag area.
__device__ __forceinline__ u64* flag(const RankPointers& rank, int index) {
  return rank.flags + static_cast<u64>(index) * kFlagStride;
}

__device__ __forceinline__ u64 load_acquire(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void store_release(u64* p, u64 v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ bool leader() { return threadIdx.x == 0; }

// The launch's abort word (DeviceArgs::abort), per block: begin_launch sets it. Waits look at it every kAbortPolls
// spins (it lives in host memory: a read crosses PCIe) and give up once it is set.
__shared__ const volatile unsigned int* abort_word;
constexpr unsigned kAbortPolls = 1024;
__device__ __forceinline__ bool aborted() {
  const volatile unsigned int* w = abort_word;
  return w != nullptr && *w != 0;
}
// Counts a spin; true every kAbortPolls spins when the abort word is set.
__device__ __forceinline__ bool give_up(unsigned& spins) { return (++spins % kAbortPolls) == 0 && aborted(); }

// Every thread of the block arrives; after a group of waits this publishes what the leader observed.
__device__ __forceinline__ void sync() { __syncthreads(); }

// The leader spins until *counter >= target. Follow a group of waits with sync() before touching the data.
__device__ __forceinline__ void wait(const u64* counter, u64 target) {
  if (leader()) {
    unsigned spins = 0;
    while (load_acquire(counter) < target) {
      if (give_up(spins)) return;
    }
  }
}

// The credit step a sender needs before filling the FIFO slot of chunk i: chunk i - depth drained (step 0, the
// receiver having entered this launch, for the first `depth` chunks).
__device__ __forceinline__ u64 slot_free_step(u64 i, int depth) { return i + 1 > u64(depth) ? i + 1 - depth : 0; }

// Waits until the rank that owns `counter` has finished the chunks of `done` that overlap `needed`: `done` is the
// range another block of this GPU reduces in chunks of `chunk` elements, posting step i + 1 after chunk i.
template <typename Range>
__device__ __forceinline__ void wait_covered(const u64* counter, u64 epoch_bits, Range done, Range needed,
                                             u64 chunk) {
  if (needed.end <= done.begin || needed.begin >= done.end) return;
  const u64 last = (needed.end < done.end ? needed.end : done.end) - done.begin;
  wait(counter, epoch_bits | ((last + chunk - 1) / chunk));
}

// The launch's epoch. A GPU's launch counter is two words on one line of GPU memory, zeroed once: [0] the launches
// finished, [1] the blocks of the current launch that have finished. Given by the host (`given` > 0: no calls were
// ever captured into a graph), the epoch needs no load; block 0 records it in [0] for launches that will read it.
// Otherwise (graph replays and every launch after the first capture) every block reads [0]: a communicator's
// launches on one GPU run one after another (stream order), so all blocks of one read the same value, and the last
// block out raises it (end_launch). Every block calls begin_launch first and end_launch last.
__device__ __forceinline__ u64 begin_launch(u64* counter, u64 given, const volatile unsigned int* abort) {
  abort_word = abort;  // every thread stores the same value, then reads its own store
  if (given > 0) {
    if (blockIdx.x == 0 && leader()) counter[0] = given;
    return given;
  }
  __shared__ u64 epoch;
  if (leader()) epoch = *static_cast<const volatile u64*>(counter) + 1;
  __syncthreads();
  return epoch;
}

__device__ __forceinline__ void end_launch(u64* counter, u64 given, u64 epoch) {
  if (given > 0) return;
  __syncthreads();
  if (leader()) {
    __threadfence();  // this block read [0] before it counts itself out
    if (atomicAdd(counter + 1, 1ull) + 1 == gridDim.x) {
      counter[1] = 0;
      counter[0] = epoch;  // seen by the next launch, which starts after this one ends
    }
  }
}

}  // namespace canopy
