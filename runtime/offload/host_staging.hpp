// HostStaging: the second path of Blink's hybrid transfers. Beside the kernels that drive NVLink, a share of a
// broadcast's or a reduce's bytes crosses PCIe through pinned host memory, chunk by chunk through a ring of slots:
// - broadcast: the root GPU's copy engine fills a slot, every other GPU's copy engine drains it into its ranks'
//   buffers;
// - reduce: every other GPU's copy engine writes its ranks' chunks into a slot, the root's copy engine brings them
//   into a gathering buffer on the root GPU ((ranks on other GPUs) x the staged bytes, kept and grown), and a
//   combining kernel (combine_kernels.hpp) reduces them with the root GPU's own ranks' inputs, in rank order, into
//   the root's buffer: once all are there, where the collective's own kernels hold the SMs meanwhile, or chunk by
//   chunk as they land, on a stream of its own, where the SMs are free (beside the copy engines).
// Events order a slot's refill after its last reads, so the fill and drain of neighbouring slots overlap. The copies
// run on side streams of their own, forked from the caller's streams before the kernels are queued (they start once
// the work queued before the call is done) and joined back after (the caller's streams wait for them), so a call
// keeps its stream semantics and the kernels never wait for the copies. How large a share: planner/host_share.hpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "runtime/offload/combine_kernels.hpp"
#include "core/status.hpp"

namespace canopy {

// Where one rank's staged bytes go.
struct StagedTarget {
  int device = 0;       // device index (position in the ordinals HostStaging was made with)
  void* dst = nullptr;  // on that device
};

// One rank's input to a staged reduce.
struct StagedSource {
  int device = 0;             // device index
  const void* src = nullptr;  // on that device
};

class HostStaging {
 public:
  static constexpr int kSlots = 4;
  static constexpr std::size_t kSlotBytes = std::size_t{4} << 20;  // the fastest of 1, 4 and 16 MiB on H200 x2

  // Side streams and events on every device (CUDA ordinals, by device index) and a pinned ring of kSlots slots.
  static Status create(std::vector<int> ordinals, std::unique_ptr<HostStaging>* out);
  ~HostStaging();  // waits for its copies, then frees
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // The side streams start after what `streams` (the caller's, by device index) hold now.
  Status fork(std::span<const cudaStream_t> streams);
  // `bytes` from `src` on device `root` to every target: through the ring to other devices, by a device copy on the
  // root's own. Between fork and join.
  Status broadcast(int root, const void* src, std::span<const StagedTarget> targets, std::size_t bytes);
  // `bytes` (a multiple of the dtype's size) of every source, reduced with `op` in source order, into `dst` on device
  // `root`: through the ring from other devices, read in place on the root's own. Between fork and join; at most
  // CombineKernels::kMaxSources sources. each_chunk: combine every chunk as it lands (the SMs are free meanwhile)
  // instead of all of them in one pass after the last.
  Status reduce(int root, void* dst, std::span<const StagedSource> sources, std::size_t bytes, DataType dtype,
                ReduceOp op, const CombineKernels& combine, bool each_chunk = false);
  // The caller's streams wait for every copy queued since fork.
  Status join(std::span<const cudaStream_t> streams);

  // The chunk a staged broadcast of `bytes` moves per slot: an eighth of it (so the pipeline fills quickly),
  // 64 KiB-aligned, within [256 KiB, kSlotBytes].
  static std::size_t chunk_for(std::size_t bytes);

 private:
  struct Device;
  HostStaging() = default;
  // Before `writer` refills a slot, its side stream waits until the slot's last readers are done (its own earlier
  // reads are behind it on its stream). A never-recorded event is no wait.
  Status wait_free(int writer, int slot);
  Status gathering_on(int device, std::size_t bytes, char** out);  // a reduce root's gathering buffer, grown

  std::vector<int> ordinals_;
  std::vector<Device> devices_;
  char* ring_ = nullptr;
  std::vector<int> readers_[kSlots];  // devices whose `drained` event marks the slot's last read
  std::size_t next_slot_ = 0;  // slots used so far, over every call: the ring position
};

}  // namespace canopy
