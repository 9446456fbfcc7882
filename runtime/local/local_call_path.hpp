// LocalCallPath: one process driving every GPU of its communicator (Communicator::create, as ncclCommInitAll): the
// topology given or detected, the ranks placed on the GPUs (virtual ranks beyond them), peer access between them
// (LocalPeerMemory), and every call's kernels launched on all of them (GpuKernels), with a large call's share on the
// copy engines or through host memory (Offload); a group of sends and receives is matched and copied between the
// ranks' streams (PointToPointCopies). Ranks of no other process: nothing is exchanged, split or agreed.
#pragma once

#include <memory>
#include <mutex>

#include "runtime/comm/call_failure.hpp"
#include "runtime/comm/call_path.hpp"
#include "runtime/comm/communicator_layout.hpp"
#include "runtime/local/gpu_kernels.hpp"
#include "runtime/local/point_to_point_copies.hpp"
#include "runtime/transport/peer_memory.hpp"

namespace canopy {

class LocalCallPath final : public CallPath {
 public:
  explicit LocalCallPath(Logger log);
  ~LocalCallPath() override;  // waits for its launches, then frees its memory and modules

  // Communicator::create's steps, in order: the topology (given, or detected from the GPUs), the placement, peer
  // access, the configuration, the kernels' services. Throws canopy::Error.
  void create(const CommunicatorOptions& options);

  const CommunicatorLayout& layout() const override { return layout_; }
  int own_ranks() const override { return layout_.ranks(); }
  int first_own_rank() const override { return 0; }
  bool on_own_buffers() const override { return false; }
  bool on_peer_buffers() const override { return false; }
  const std::string& machine_key() const override { return kernels_.tuning().machine_key(); }
  std::filesystem::path tuning_path() const override { return kernels_.tuning().path(); }
  std::int64_t tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const override;

  const ProtocolTable& protocols() const override { return kernels_.protocols(); }
  bool engines_take(Collective collective, std::uint64_t bytes) const override;
  std::uint64_t staged_count(Collective collective, std::uint64_t count, DataType dtype, int root) override;
  Communicator::Choice choice(Collective collective, std::uint64_t count, DataType dtype, int root,
                              bool in_place) override;
  CollectiveSpec spec_of(const CollectiveCall& call, bool in_place) override;

  Status run(const CollectiveCall& call) override;
  Status prepare(std::span<const CollectiveSpec> specs) override;
  Status prepare(const CollectiveCall& call) override;
  Status info(const CollectiveSpec& spec, CollectiveInfo* out) override;
  Status scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype, const void* device_scalar,
               const void* host_scalar, cudaStream_t stream) override;
  Status combining_kernels(const CombineKernels** out) override;
  Status send_recv(std::span<const PointToPoint> ops) override;  // local_send_recv.cpp

  Status exchange(std::string mine, std::vector<std::string>* all) override;
  Status split(int color, int key, const CommunicatorOptions& options, const JoinPath& join,
               std::unique_ptr<CallPath>* out) override;

  Status abort() override;
  Status fail(const std::string& why) override;
  void leave_at_exit() override;
  Status async_error() override { return failure_.status(); }

 private:
  Status run_here(const CollectiveCall& given);  // a call, the kernels' (an avg as its sum)
  Status fail_and_drain(const std::string& why, bool aborted);

  CommunicatorLayout layout_;
  std::unique_ptr<PeerMemory> peers_;
  GpuKernels kernels_{layout_};
  PointToPointCopies copies_;  // send_recv's events
  std::mutex mutex_;  // calls are serialised
  CallFailure failure_;
};

}  // namespace canopy
