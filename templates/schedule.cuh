// The schedule as constant tables, and the executor every generated kernel runs. The emitter writes a lane
// table (one row per tree a rank takes part in), a step table (the lane's prologue, per-chunk and epilogue steps:
// wait / sync / reduce_copy / signal, exactly codegen/schedule.hpp's IR) and the buffers and counters the steps
// name; run_block() walks them. Code size and compile time therefore do not grow with the number of trees; the
// element type, operator, chunk size, FIFO depth and the reduce_copy shapes in use are compile-time constants of
// the generated Config.
#pragma once

#include "canopy/flags.cuh"
#include "canopy/range.cuh"
#include "canopy/reduce_copy.cuh"

namespace canopy {

enum StepKind : unsigned char { kWait = 0, kSync = 1, kReduceCopy = 2, kSignal = 3 };
// What a wait waits for, in epoch e, for chunk i of the block's part with n chunks.
enum WaitUntil : unsigned char { kUntilEpoch = 0, kUntilChunk = 1, kUntilSlotFree = 2, kUntilAll = 3, kUntilCovered = 4 };
enum BufferKind : unsigned char { kSend = 0, kRecv = 1, kFifo = 2 };
enum BufferMode : unsigned char { kWhole = 0, kBlockLocal = 1, kUnlessSource = 2, kUnit = 3 };

// [0, count) (block_of < 0) or block block_of of an allgather/reduce-scatter buffer, cut by `splits` splits
// [lo, hi) / kSplitScale in turn; or, in a program's lanes (units > 0), one chunk [0, count / units).
struct RangeRec {
  int block_of;
  int splits;
  unsigned int lo[2], hi[2];
  unsigned int units;  // 0 in tree lanes (rows leave it out)
};

struct BufferRec {
  BufferKind kind;
  BufferMode mode;
  unsigned short rank;
  unsigned long long fifo_offset;  // kFifo: block 0's slots, in bytes into the rank's scratch
  unsigned long long unit;         // kUnit: the program chunk addressed, at unit * (count / units)
};

struct FlagRec {
  unsigned short rank;
  unsigned int index;  // block b uses index + b
};

struct StepRec {
  StepKind kind;
  WaitUntil until;           // kWait
  unsigned char sources;     // kReduceCopy: buffers[first ..]
  unsigned char destinations;  // kReduceCopy: buffers[first + sources ..]
  unsigned short flags;      // kSignal: flags[first ..], raised to (e, i + 1), or (e, 0) when `epoch_only`
  unsigned short first;
  unsigned char epoch_only;  // kSignal
  FlagRec flag;              // kWait
  int dependency;            // kWait kUntilCovered: the lane whose per-block progress counters `flag` names
};

struct LaneRec {
  RangeRec range;
  int blocks;
  unsigned short first_step;  // steps[first_step ..]: prologue, then per-chunk, then epilogue steps
  unsigned short prologue, per_chunk, epilogue;
};

struct BlockRec {
  unsigned short lane;
  unsigned short block;  // 0 .. lanes[lane].blocks - 1
};

struct Program {
  const LaneRec* lanes;
  const StepRec* steps;
  const BufferRec* buffers;
  const FlagRec* flags;
  const BlockRec* blocks;
};

template <typename C>
__device__ __forceinline__ Range tree_range(const typename C::Args& a, const RangeRec& rr) {
  if (rr.units > 0) return Range{0, a.count / rr.units};
  Range r = rr.block_of < 0 ? Range{0, a.count} : Range{rr.block_of * a.count, (rr.block_of + 1) * a.count};
  for (int s = 0; s < rr.splits; ++s) r = split(r, rr.lo[s], rr.hi[s], C::kAlign);
  return r;
}

// Where buffer `b` holds chunk c (chunk i of the block's part) of a lane whose range is `rr`.
template <typename C>
__device__ __forceinline__ typename C::T* buffer_at(const typename C::Args& a, const BufferRec& b, const RangeRec& rr,
                                                    int block, unsigned long long i, Range c) {
  typedef typename C::T T;
  const unsigned long long at = b.mode == kBlockLocal ? c.begin - rr.block_of * a.count
                                : b.mode == kUnit     ? b.unit * (a.count / rr.units) + c.begin
                                                      : c.begin;
  switch (b.kind) {
    case kSend: return const_cast<T*>(static_cast<const T*>(a.rank[b.rank].send)) + at;
    case kRecv: return static_cast<T*>(a.rank[b.rank].recv) + at;
    default: return fifo_slot<T>(a.rank[b.rank].scratch, b.fifo_offset + block * C::kFifoBytes, i, C::kDepth,
                                 C::kChunkBytes);
  }
}

template <typename C>
__device__ __noinline__ void run_steps(const typename C::Args& a, const Program& p, const LaneRec& lane,
                                          const StepRec* steps, int count, int block, unsigned long long epoch,
                                          unsigned long long i, unsigned long long chunks, Range c) {
  typedef typename C::T T;
  for (int k = 0; k < count; ++k) {
    const StepRec& s = steps[k];
    if (s.kind == kWait) {
      if (s.until == kUntilCovered) {
        const LaneRec& done = p.lanes[s.dependency];
        const Range whole = tree_range<C>(a, done.range);
        for (int b = 0; b < done.blocks; ++b)
          wait_covered(flag(a.rank[s.flag.rank], s.flag.index + b), epoch,
                       block_part(whole, b, done.blocks, C::kAlign), c, C::kChunk);
      } else if (s.until != kUntilAll || chunks > 0) {
        const unsigned long long step = s.until == kUntilEpoch      ? 0
                                        : s.until == kUntilChunk    ? i + 1
                                        : s.until == kUntilSlotFree ? slot_free_step(i, C::kDepth)
                                                                    : chunks;
        wait(flag(a.rank[s.flag.rank], s.flag.index + block), epoch | step);
      }
    } else if (s.kind == kSync) {
      sync();
    } else if (s.kind == kReduceCopy) {
      const T* src[C::kMaxSources];
      T* dst[C::kMaxDestinations];
      for (int j = 0; j < s.sources; ++j) src[j] = buffer_at<C>(a, p.buffers[s.first + j], lane.range, block, i, c);
      for (int j = 0; j < s.destinations; ++j) {
        const BufferRec& b = p.buffers[s.first + s.sources + j];
        T* d = buffer_at<C>(a, b, lane.range, block, i, c);
        dst[j] = b.mode == kUnlessSource ? unless_same(d, src[0]) : d;
      }
      C::reduce_copy(s.sources, s.destinations, dst, src, c.size());
    } else {  // signal: every thread's writes become visible (barrier, release at system scope), then the leader posts
      __syncthreads();
      if (leader()) {
        const unsigned long long value = epoch | (s.epoch_only ? 0 : i + 1);
        for (int j = 0; j < s.flags; ++j) {
          const FlagRec& f = p.flags[s.first + j];
          store_release(flag(a.rank[f.rank], f.index + block), value);
        }
      }
    }
  }
}

// One thread block runs block `blocks[blockIdx.x].block` of lane `blocks[blockIdx.x].lane`: prologue, every
// chunk of its part, epilogue.
template <typename C>
__device__ __forceinline__ void run_block(const typename C::Args& a, const Program& p, int device) {
  const unsigned long long e = begin_launch(a.launches[device], a.epoch, a.abort);
  const BlockRec br = p.blocks[blockIdx.x];
  const LaneRec& lane = p.lanes[br.lane];
  const Range range = block_part(tree_range<C>(a, lane.range), br.block, lane.blocks, C::kAlign);
  const unsigned long long epoch = e << 32;
  const unsigned long long chunks = chunk_count(range, C::kChunk);
  const StepRec* steps = p.steps + lane.first_step;
  run_steps<C>(a, p, lane, steps, lane.prologue, br.block, epoch, 0, chunks, Range{range.begin, range.begin});
  steps += lane.prologue;
  for (unsigned long long i = 0; i < chunks; ++i)
    run_steps<C>(a, p, lane, steps, lane.per_chunk, br.block, epoch, i, chunks, chunk_of(range, i, C::kChunk));
  steps += lane.per_chunk;
  run_steps<C>(a, p, lane, steps, lane.epilogue, br.block, epoch, chunks, chunks, Range{range.end, range.end});
  end_launch(a.launches[device], a.epoch, e);
}

}  // namespace canopy
