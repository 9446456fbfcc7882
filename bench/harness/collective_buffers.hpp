// CollectiveBuffers: per-rank device buffers for exercising a communicator's collectives, as nccl-tests does:
// inputs from the test pattern (bench/harness/test_pattern.hpp), outputs poisoned before every run, the in-place
// layouts of NCCL, and every rank's output checked element by element against the reference
// (bench/harness/collective_check.hpp): on its GPU (gpu_reference_check.hpp) with a window of it on the host as a
// control, or all on the host where CANOPY_CHECK_ON_HOST=1 (or check_on_host(true)). The GPU tests and `canopy
// bench` (its #wrong column) use it. A
// multi-process communicator's buffers are its process's ranks' only (Communicator::own_ranks, from
// first_own_rank), and so are the calls set_up fills and the outputs check reads: index k is rank first + k.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "bench/harness/collective_check.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/shareable_memory.hpp"
#include "core/status.hpp"
#include "bench/harness/test_pattern.hpp"

namespace canopy {

// The CUDA ordinals of this process's ranks of `comm`, each once, in rank order.
std::vector<int> own_ordinals(const Communicator& comm);

// Where a CollectiveBuffers' buffers come from: cudaMalloc; the driver's virtual-memory API with POSIX descriptors
// (cuMemCreate, as ncclMemAlloc makes them; not legacy CUDA IPC capable); a stream-ordered pool (cudaMallocAsync's
// default pool: neither).
enum class BufferMemory { cuda_malloc, vmm, pool };

class CollectiveBuffers {
 public:
  // Per own rank, on its GPU: a send buffer of `send_bytes` and a receive buffer of `recv_bytes`; one non-blocking
  // stream per GPU. `patterns` must outlive the buffers.
  // `memory`: where the buffers come from (BufferMemory).
  static Status create(const Communicator& comm, std::uint64_t send_bytes, std::uint64_t recv_bytes,
                       const PatternKernels& patterns, std::unique_ptr<CollectiveBuffers>* out,
                       BufferMemory memory = BufferMemory::cuda_malloc);
  ~CollectiveBuffers();
  CollectiveBuffers(const CollectiveBuffers&) = delete;
  CollectiveBuffers& operator=(const CollectiveBuffers&) = delete;

  // Whether a run of `spec` fits the buffers.
  bool fits(const CheckSpec& spec) const;

  // Writes the inputs of `spec` (seed included) and poisons the outputs, then fills `call` (buffers, count,
  // dtype, op, root, streams) for the out-of-place or NCCL in-place layout. The work is queued on the streams.
  Status set_up(const CheckSpec& spec, bool in_place, CollectiveCall* call);
  // Waits for the streams and checks every rank's output (see above). An error where the GPU's check and the
  // host's disagree (a fault of the checker itself).
  Status check(const CheckSpec& spec, const CollectiveCall& call, CheckResult* result);
  // set_up, one call through `comm`, check: a whole checked run.
  Status run_checked(Communicator& comm, const CheckSpec& spec, bool in_place, CheckResult* result);
  Status synchronize();
  // Every element checked on the host (slow; what the GPU check is measured against), or on the GPU (the default).
  void check_on_host(bool on_host) { check_on_host_ = on_host; }

  const std::vector<cudaStream_t>& streams() const { return rank_streams_; }  // per own rank
  int own() const { return static_cast<int>(send_.size()); }

 private:
  CollectiveBuffers() = default;
  // Local rank k's output elements [first, first + n), copied to the host a staging buffer at a time and checked.
  Status check_window(const CheckSpec& spec, int k, const void* output, std::uint64_t first, std::uint64_t n,
                      CheckResult* result);
  Status check_rank_on_host(const CheckSpec& spec, int k, const void* output, CheckResult* result);
  Status check_rank_on_gpu(const CheckSpec& spec, int k, const void* output, CheckResult* result);
  int first_ = 0;                        // the first own rank
  std::vector<int> ordinal_of_rank_;
  std::vector<void*> send_, recv_;       // per rank
  std::vector<std::unique_ptr<ShareableMemory>> vmm_;  // BufferMemory::vmm: what send_ and recv_ point into
  std::vector<const void*> call_send_;   // the layout of the last set_up
  std::vector<void*> call_recv_;
  std::vector<cudaStream_t> device_streams_, rank_streams_;
  std::vector<int> device_ordinals_;
  std::uint64_t send_bytes_ = 0, recv_bytes_ = 0;
  const PatternKernels* patterns_ = nullptr;
  void* host_ = nullptr;  // pinned staging for copies back
  std::uint64_t host_bytes_ = 0;
  bool check_on_host_ = false;
};

}  // namespace canopy
