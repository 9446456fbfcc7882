// ProcessHostRing (see process_host_ring.hpp).
#include "runtime/offload/process_host_ring.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/offload/ring_sequence.hpp"

namespace canopy {

bool ProcessHostRing::supported() { return StreamWords::supported(); }

Status ProcessHostRing::share(FdChannel& channel, int process, int processes, int ordinal,
                              std::unique_ptr<ProcessHostRing>* out) {
  if (!supported())
    return Status(StatusCode::unsupported, "the host ring across processes needs the driver's stream memory "
                                           "operations (cuStreamWaitValue32, cuStreamWriteValue32), which this "
                                           "driver lacks: leave the host path off across processes");
  std::unique_ptr<ProcessHostRing> r(new ProcessHostRing());
  if (Status s = SharedRings::share(channel, process, processes, &r->rings_); !s.ok()) return s;
  std::vector<void*> bases;
  for (int p = 0; p < processes; ++p) bases.push_back(r->rings_->base(p));
  // Two lanes: an allreduce's copies out of this process's ring (lane 1) overlap its copies in (lane 0).
  if (Status s = r->words_.create("the host ring across processes", ordinal, bases, SharedRings::ring_bytes(), 2);
      !s.ok())
    return s;
  *out = std::move(r);
  return Status();
}

ProcessHostRing::~ProcessHostRing() {
  if (!gathering_) return;
  CurrentDevice keep;
  (void)cudaSetDevice(words_.ordinal());
  (void)words_.synchronize();
  (void)cudaFree(gathering_);
  (void)cudaGetLastError();
}

Status ProcessHostRing::fork(std::span<const cudaStream_t> streams) { return words_.fork(streams); }

Status ProcessHostRing::send(const void* src, std::span<void* const> local, std::size_t bytes) {
  CurrentDevice keep;
  if (Status s = copy_local(src, local, bytes); !s.ok()) return s;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  const SharedRings& rings = *rings_;
  const int me = rings.process();
  if (rings.processes() < 2) return Status();
  const char* from = static_cast<const char*>(src);
  for (const RingChunk& c : ring_chunks(rings.chunks(me), bytes, kSlotBytes, kSlots)) {
    if (Status s = wait_drained(c); !s.ok()) return s;
    if (cudaError_t e = cudaMemcpyAsync(rings.slot(me, c.slot), from + c.offset, c.bytes, cudaMemcpyDeviceToHost,
                                        words_.side());
        e != cudaSuccess)
      return words_.failed("a copy into the host ring", e);
    if (Status s = words_.write(me, rings.fill_word(me, c.slot), c.filled); !s.ok()) return s;
    rings_->count_chunk(me, c.slot);
  }
  return Status();
}

Status ProcessHostRing::wait_drained(const RingChunk& c) {
  const SharedRings& rings = *rings_;
  const int me = rings.process();
  if (!c.wait_drained) return Status();
  for (int p = 0; p < rings.processes(); ++p)
    if (rings.read_last(me, c.slot, p))
      if (Status s = words_.wait(me, rings.drain_word(me, c.slot, p), c.drained); !s.ok()) return s;
  return Status();
}

Status ProcessHostRing::receive(int root, std::span<void* const> dst, std::size_t bytes) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  const SharedRings& rings = *rings_;
  for (const RingChunk& c : ring_chunks(rings.chunks(root), bytes, kSlotBytes, kSlots)) {
    if (Status s = words_.wait(root, rings.fill_word(root, c.slot), c.filled); !s.ok()) return s;
    for (void* d : dst)
      if (cudaError_t e = cudaMemcpyAsync(static_cast<char*>(d) + c.offset, rings.slot(root, c.slot), c.bytes,
                                          cudaMemcpyHostToDevice, words_.side());
          e != cudaSuccess)
        return words_.failed("a copy out of the host ring", e);
    if (Status s = words_.write(root, rings.drain_word(root, c.slot, rings.process()), c.filled); !s.ok())
      return s;
    rings_->count_chunk(root, c.slot);
  }
  return Status();
}

std::size_t ProcessHostRing::piece_for(int ranks) {
  return std::max<std::size_t>(4096, kSlotBytes / static_cast<std::size_t>(std::max(1, ranks)) / 4096 * 4096);
}

Status ProcessHostRing::gather_send(int root, std::span<const void* const> src, std::size_t bytes) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  const int me = rings_->process();
  const std::size_t piece = piece_for(static_cast<int>(src.size()));
  for (const RingChunk& c : ring_chunks(rings_->chunks(me), bytes, piece, kSlots))
    if (Status s = put_chunk(c, src, piece, root); !s.ok()) return s;
  return Status();
}

Status ProcessHostRing::put_chunk(const RingChunk& c, std::span<const void* const> src, std::size_t piece,
                                  int reader) {
  const SharedRings& rings = *rings_;
  const int me = rings.process();
  if (Status s = wait_drained(c); !s.ok()) return s;
  for (std::size_t i = 0; i < src.size(); ++i)
    if (cudaError_t e = cudaMemcpyAsync(rings.slot(me, c.slot) + i * piece, static_cast<const char*>(src[i]) + c.offset,
                                        c.bytes, cudaMemcpyDeviceToHost, words_.side());
        e != cudaSuccess)
      return words_.failed("a copy into the host ring", e);
  if (Status s = words_.write(me, rings.fill_word(me, c.slot), c.filled); !s.ok()) return s;
  rings_->count_chunk(me, c.slot, reader);
  return Status();
}

Status ProcessHostRing::take_chunk(int ring, int ring_ranks, const RingChunk& c, int lane) {
  const SharedRings& rings = *rings_;
  const int me = rings.process();
  const std::size_t piece = piece_for(ring_ranks);
  if (Status s = words_.wait(ring, rings.fill_word(ring, c.slot), c.filled, lane); !s.ok()) return s;
  for (int i = 0; i < ring_ranks; ++i)
    if (cudaError_t e = cudaMemcpyAsync(static_cast<void*>(gathered_at(ring, i) + c.offset),
                                        rings.slot(ring, c.slot) + static_cast<std::size_t>(i) * piece, c.bytes,
                                        cudaMemcpyHostToDevice, words_.side(lane));
        e != cudaSuccess)
      return words_.failed("a copy out of the host ring", e);
  if (Status s = words_.write(ring, rings.drain_word(ring, c.slot, me), c.filled, lane); !s.ok()) return s;
  rings_->count_chunk(ring, c.slot, me);
  return Status();
}

Status ProcessHostRing::ready_gathering(std::span<const int> ranks_of_process, std::size_t bytes) {
  const int me = rings_->process();
  // The gathering buffer: every other process's ranks' bytes in a row, grown (after the work queued on it).
  gathered_at_.assign(ranks_of_process.size(), 0);
  std::size_t total = 0;
  for (std::size_t p = 0; p < ranks_of_process.size(); ++p) {
    gathered_at_[p] = total;
    if (static_cast<int>(p) != me) total += static_cast<std::size_t>(ranks_of_process[p]) * bytes;
  }
  gathered_bytes_ = bytes;
  if (total <= gathering_bytes_) return Status();
  if (Status s = words_.synchronize(); !s.ok()) return s;
  if (gathering_) (void)cudaFree(gathering_);
  gathering_ = nullptr;
  gathering_bytes_ = 0;
  void* p = nullptr;
  if (cudaError_t e = cudaMalloc(&p, total); e != cudaSuccess)
    return words_.failed(fmt::format("allocating the gathering buffer of the host rings ({} bytes)", total), e);
  gathering_ = static_cast<char*>(p);
  gathering_bytes_ = total;
  return Status();
}

Status ProcessHostRing::gather_receive(std::span<const int> ranks_of_process, std::size_t bytes) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  if (Status s = ready_gathering(ranks_of_process, bytes); !s.ok()) return s;
  const int me = rings_->process();
  for (int p = 0; p < static_cast<int>(ranks_of_process.size()); ++p) {
    if (p == me) continue;
    for (const RingChunk& c : ring_chunks(rings_->chunks(p), bytes, piece_for(ranks_of_process[p]), kSlots))
      if (Status s = take_chunk(p, ranks_of_process[p], c, 0); !s.ok()) return s;
  }
  return Status();
}

Status ProcessHostRing::exchange(std::span<const void* const> src, std::span<const int> ranks_of_process,
                                 std::size_t bytes) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  if (Status s = ready_gathering(ranks_of_process, bytes); !s.ok()) return s;
  // Lane 1 refills the gathering buffer only after the last call's combining kernel (lane 0) has read it, whichever
  // streams the calls came on.
  if (Status s = words_.follow(1, 0); !s.ok()) return s;
  const int me = rings_->process();
  const int processes = static_cast<int>(ranks_of_process.size());
  // Every ring's chunks, numbered before any is counted.
  std::vector<std::vector<RingChunk>> chunks(processes);
  std::size_t most = 0;
  for (int p = 0; p < processes; ++p) {
    const std::size_t piece = piece_for(p == me ? static_cast<int>(src.size()) : ranks_of_process[p]);
    chunks[p] = ring_chunks(rings_->chunks(p), bytes, piece, kSlots);
    most = std::max(most, chunks[p].size());
  }
  // This process's chunks in on lane 0, every other's out on lane 1, so both directions of PCIe move at once. Chunk k
  // of each ring is queued before chunk k + 1 of any: a refill of a slot waits for the drains of the chunk before it
  // (k - kSlots), queued earlier on every process's lane 1, and a drain waits only for its chunk's fill, queued on
  // the owner's lane 0 behind nothing later; no lane waits on one that waits on it.
  const std::size_t piece = piece_for(static_cast<int>(src.size()));
  for (std::size_t k = 0; k < most; ++k)
    for (int p = 0; p < processes; ++p) {
      const int ring = (me + p) % processes;  // this process's own first
      if (k >= chunks[ring].size()) continue;
      const Status s = ring == me ? put_chunk(chunks[ring][k], src, piece, -1)
                                  : take_chunk(ring, ranks_of_process[ring], chunks[ring][k], 1);
      if (!s.ok()) return s;
    }
  // What follows (the combining kernel, on lane 0) reads the gathered bytes.
  return words_.follow(0, 1);
}

void ProcessHostRing::gather_pass(int ring, int ring_ranks, int root, std::size_t bytes) {
  for (const RingChunk& c : ring_chunks(rings_->chunks(ring), bytes, piece_for(ring_ranks), kSlots))
    rings_->count_chunk(ring, c.slot, root);
}

char* ProcessHostRing::gathered_at(int process, int local) const {
  return gathering_ + gathered_at_[process] + static_cast<std::size_t>(local) * gathered_bytes_;
}

const void* ProcessHostRing::gathered(int process, int local) const { return gathered_at(process, local); }

Status ProcessHostRing::combine(const CombineKernels& kernels, void* out, std::span<const void* const> sources,
                                std::uint64_t count, DataType dtype, ReduceOp op) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  return kernels.run(out, sources, count, dtype, op, words_.side());
}

Status ProcessHostRing::copy_local(const void* src, std::span<void* const> dst, std::size_t bytes) {
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  for (void* d : dst)
    if (d != src)
      if (cudaError_t e = cudaMemcpyAsync(d, src, bytes, cudaMemcpyDeviceToDevice, words_.side()); e != cudaSuccess)
        return words_.failed("a device copy of the staged bytes", e);
  return Status();
}

Status ProcessHostRing::join(std::span<const cudaStream_t> streams) { return words_.join(streams); }

}  // namespace canopy
