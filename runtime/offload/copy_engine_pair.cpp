// CopyEnginePair (see copy_engine_pair.hpp): side streams, events, and the chunk schedules.
#include "runtime/offload/copy_engine_pair.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/cuda/cuda_check.hpp"

namespace canopy {

struct CopyEnginePair::Gpu {
  int ordinal = 0;
  cudaStream_t push = nullptr;        // first pushes: the broadcast, an allreduce's inputs to the other GPU
  cudaStream_t combine = nullptr;     // combining kernels
  cudaStream_t back = nullptr;        // pushes of sums back, a broadcast root's own copy
  cudaEvent_t ready = nullptr;        // on the caller's stream: what the call starts after
  cudaEvent_t pushed = nullptr;       // on `push`: a chunk's input reached the other GPU
  cudaEvent_t summed = nullptr;       // on `combine`: a chunk's half is reduced
  std::array<cudaEvent_t, 3> done{};  // on each side stream: the call's work
  std::array<bool, 3> used{};         // per side stream: has work since fork

  std::array<cudaStream_t, 3> sides() const { return {push, combine, back}; }
};

namespace {
enum Side { kPush = 0, kCombine = 1, kBack = 2 };
}  // namespace

// Every call of a step names the device.
#define CANOPY_ENGINES(call, ordinal) CANOPY_CUDA_RETURN_ON_GPU("copy engines", call, ordinal)

Status CopyEnginePair::create(std::array<int, 2> ordinals, std::size_t chunk_bytes,
                              std::unique_ptr<CopyEnginePair>* out) {
  if (ordinals[0] == ordinals[1])
    return Status(StatusCode::invalid_argument,
                  fmt::format("copy engines: both ranks are on GPU {}; they move data between two GPUs", ordinals[0]));
  if (chunk_bytes % 4096 != 0)
    return Status(StatusCode::invalid_argument,
                  fmt::format("copy engines: chunk of {} bytes; use a multiple of 4 KiB, e.g. 64 MiB", chunk_bytes));
  std::unique_ptr<CopyEnginePair> p(new CopyEnginePair());
  p->chunk_ = chunk_bytes;
  p->gpus_.resize(2);
  for (int r = 0; r < 2; ++r) {
    Gpu& g = p->gpus_[r];
    g.ordinal = ordinals[r];
    CANOPY_ENGINES(cudaSetDevice(g.ordinal), g.ordinal);
    for (cudaStream_t* s : {&g.push, &g.combine, &g.back})
      CANOPY_ENGINES(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), g.ordinal);
    for (cudaEvent_t* e : {&g.ready, &g.pushed, &g.summed, &g.done[0], &g.done[1], &g.done[2]})
      CANOPY_ENGINES(cudaEventCreateWithFlags(e, cudaEventDisableTiming), g.ordinal);
  }
  *out = std::move(p);
  return Status();
}

CopyEnginePair::~CopyEnginePair() {
  for (Gpu& g : gpus_) {
    cudaSetDevice(g.ordinal);
    for (cudaStream_t s : {g.push, g.combine, g.back})
      if (s) cudaStreamSynchronize(s);
  }
  for (Gpu& g : gpus_) {
    cudaSetDevice(g.ordinal);
    for (cudaEvent_t e : {g.ready, g.pushed, g.summed, g.done[0], g.done[1], g.done[2]})
      if (e) cudaEventDestroy(e);
    for (cudaStream_t s : {g.push, g.combine, g.back})
      if (s) cudaStreamDestroy(s);
  }
  cudaGetLastError();  // a teardown failure must not stick to the caller's next call
}

Status CopyEnginePair::fork(std::span<const cudaStream_t> streams) {
  for (int r = 0; r < 2; ++r) {
    CANOPY_ENGINES(cudaSetDevice(gpus_[r].ordinal), gpus_[r].ordinal);
    CANOPY_ENGINES(cudaEventRecord(gpus_[r].ready, streams[r]), gpus_[r].ordinal);
    gpus_[r].used = {};
  }
  return Status();
}

// Each GPU's engines write the other's memory: a side stream starts after both callers' streams.
Status CopyEnginePair::side(int r, int which, cudaStream_t* out) {
  Gpu& g = gpus_[r];
  CANOPY_ENGINES(cudaSetDevice(g.ordinal), g.ordinal);
  const cudaStream_t s = g.sides()[which];
  if (!g.used[which]) {
    for (const Gpu& caller : gpus_) CANOPY_ENGINES(cudaStreamWaitEvent(s, caller.ready), g.ordinal);
    g.used[which] = true;
  }
  *out = s;
  return Status();
}

Status CopyEnginePair::broadcast(int root, std::span<const void* const> send, std::span<void* const> recv,
                                 std::size_t bytes) {
  Gpu& from = gpus_[root];
  const int other = 1 - root;
  const char* src = static_cast<const char*>(send[root]);
  char* dst = static_cast<char*>(recv[other]);
  cudaStream_t push = nullptr, back = nullptr;
  if (Status s = side(root, kPush, &push); !s.ok()) return s;
  std::size_t off = 0;
  for (std::size_t n : chunks(Collective::broadcast, bytes, chunk_)) {
    CANOPY_ENGINES(cudaMemcpyAsync(dst + off, src + off, n, cudaMemcpyDeviceToDevice, push), from.ordinal);
    off += n;
  }
  if (recv[root] == send[root]) return Status();
  if (Status s = side(root, kBack, &back); !s.ok()) return s;
  CANOPY_ENGINES(cudaMemcpyAsync(recv[root], src, bytes, cudaMemcpyDeviceToDevice, back), from.ordinal);
  return Status();
}

Status CopyEnginePair::allreduce(std::span<const void* const> send, std::span<void* const> recv, std::size_t bytes,
                                 DataType dtype, ReduceOp op, std::array<const CombineKernels*, 2> combine) {
  const auto element = static_cast<std::size_t>(size_of(dtype));
  for (int r = 0; r < 2; ++r)
    for (int which : {kPush, kCombine, kBack}) {
      cudaStream_t unused = nullptr;
      if (Status s = side(r, which, &unused); !s.ok()) return s;
    }
  std::size_t off = 0;
  for (std::size_t n : chunks(Collective::allreduce, bytes, chunk_)) {
    // Rank 0 reduces the chunk's first half, rank 1 the rest; the split is 16-byte aligned (whole elements).
    const std::size_t half = n / 2 / 16 * 16;
    const std::size_t at[2] = {off, off + half}, len[2] = {half, n - half};
    for (int r = 0; r < 2; ++r) {  // rank r's input for the other's half lands in the other's receive buffer
      const int o = 1 - r;
      Gpu& g = gpus_[r];
      CANOPY_ENGINES(cudaSetDevice(g.ordinal), g.ordinal);
      CANOPY_ENGINES(cudaMemcpyAsync(static_cast<char*>(recv[o]) + at[o], static_cast<const char*>(send[r]) + at[o],
                                     len[o], cudaMemcpyDeviceToDevice, g.push),
                     g.ordinal);
      CANOPY_ENGINES(cudaEventRecord(g.pushed, g.push), g.ordinal);
    }
    for (int r = 0; r < 2; ++r) {  // rank r sums its half, in rank order, and pushes the sum to the other
      Gpu& g = gpus_[r];
      char* sum = static_cast<char*>(recv[r]) + at[r];
      const void* mine = static_cast<const char*>(send[r]) + at[r];
      const void* in_rank_order[2] = {r == 0 ? mine : sum, r == 0 ? sum : mine};
      CANOPY_ENGINES(cudaSetDevice(g.ordinal), g.ordinal);
      CANOPY_ENGINES(cudaStreamWaitEvent(g.combine, gpus_[1 - r].pushed), g.ordinal);
      if (Status s = combine[r]->run(sum, in_rank_order, len[r] / element, dtype, op, g.combine); !s.ok()) return s;
      CANOPY_ENGINES(cudaEventRecord(g.summed, g.combine), g.ordinal);
      CANOPY_ENGINES(cudaStreamWaitEvent(g.back, g.summed), g.ordinal);
      CANOPY_ENGINES(
          cudaMemcpyAsync(static_cast<char*>(recv[1 - r]) + at[r], sum, len[r], cudaMemcpyDeviceToDevice, g.back),
          g.ordinal);
    }
    off += n;
  }
  return Status();
}

Status CopyEnginePair::reduce(int root, std::span<const void* const> send, std::span<void* const> recv,
                              std::size_t bytes, DataType dtype, ReduceOp op, const CombineKernels& combine) {
  const auto element = static_cast<std::size_t>(size_of(dtype));
  Gpu& to = gpus_[root];
  Gpu& from = gpus_[1 - root];
  cudaStream_t push = nullptr, combining = nullptr;
  if (Status s = side(1 - root, kPush, &push); !s.ok()) return s;
  if (Status s = side(root, kCombine, &combining); !s.ok()) return s;
  std::size_t off = 0;
  for (std::size_t n : chunks(Collective::reduce, bytes, chunk_)) {
    char* landed = static_cast<char*>(recv[root]) + off;
    CANOPY_ENGINES(cudaSetDevice(from.ordinal), from.ordinal);
    CANOPY_ENGINES(
        cudaMemcpyAsync(landed, static_cast<const char*>(send[1 - root]) + off, n, cudaMemcpyDeviceToDevice, push),
        from.ordinal);
    CANOPY_ENGINES(cudaEventRecord(from.pushed, push), from.ordinal);
    const void* mine = static_cast<const char*>(send[root]) + off;
    const void* in_rank_order[2] = {root == 0 ? mine : landed, root == 0 ? landed : mine};
    CANOPY_ENGINES(cudaSetDevice(to.ordinal), to.ordinal);
    CANOPY_ENGINES(cudaStreamWaitEvent(combining, from.pushed), to.ordinal);
    if (Status s = combine.run(landed, in_rank_order, n / element, dtype, op, combining); !s.ok()) return s;
    off += n;
  }
  return Status();
}

std::vector<std::size_t> CopyEnginePair::chunks(Collective collective, std::size_t bytes, std::size_t fixed) {
  constexpr std::size_t kAlign = 64 << 10, kLeast = 16 << 20, kTaperTo = 4 << 20;
  if (bytes == 0) return {};
  if (fixed == 0 && collective == Collective::broadcast) return {bytes};
  // Chunks of whole 64 KiB (so every copy and combining pass starts 16-byte aligned where the buffers do); the last
  // takes the odd bytes.
  const std::size_t odd = bytes % kAlign;
  std::size_t left = bytes - odd;
  const std::size_t chunk = fixed > 0 ? fixed : std::max((bytes / 4 + kAlign - 1) / kAlign * kAlign, kLeast);
  std::vector<std::size_t> tail;  // a reduce's taper, from the last chunk back: 4 MiB, 8, 16, ... below a quarter
  if (fixed == 0 && collective == Collective::reduce)
    for (std::size_t t = kTaperTo; t < chunk && left > 0; t *= 2) {
      tail.push_back(std::min(t, left));
      left -= tail.back();
    }
  std::vector<std::size_t> out(left / chunk, chunk);
  if (left % chunk > 0) out.push_back(left % chunk);
  out.insert(out.end(), tail.rbegin(), tail.rend());
  if (out.empty()) out.push_back(0);
  out.back() += odd;
  return out;
}

Status CopyEnginePair::join(std::span<const cudaStream_t> streams) {
  for (Gpu& g : gpus_)
    for (int k = 0; k < 3; ++k)
      if (g.used[k]) {
        CANOPY_ENGINES(cudaSetDevice(g.ordinal), g.ordinal);
        CANOPY_ENGINES(cudaEventRecord(g.done[k], g.sides()[k]), g.ordinal);
      }
  // Both callers' streams wait for every side stream used: each GPU's engines wrote the other's memory.
  for (int r = 0; r < 2; ++r) {
    CANOPY_ENGINES(cudaSetDevice(gpus_[r].ordinal), gpus_[r].ordinal);
    for (const Gpu& g : gpus_)
      for (int k = 0; k < 3; ++k)
        if (g.used[k]) CANOPY_ENGINES(cudaStreamWaitEvent(streams[r], g.done[k]), gpus_[r].ordinal);
  }
  return Status();
}

}  // namespace canopy
