// HostsCallPath: this process's part of a communicator over several hosts (docs/multi-host.md): each host's
// processes joined as one communicator of their own (the inside path, made through the factory's join: the processes
// of one host), and the real NCCL between hosts, one communicator per rail (HostsRuntime). Every call runs its
// phases (hosts_phases.cpp) on the caller's stream. It keeps the world's bootstrap group (exchange, split, the call
// check's round trip) and a layout that only names the world's ranks (gpu0 .. gpu{N-1}, one device index per
// process, every host's GPUs joined by one "network" relay), so the accessors answer as for any multi-process
// communicator. No kernels of its own: no tuning, a default protocol table, nothing staged or prepared ahead.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/comm/call_failure.hpp"
#include "runtime/comm/call_path.hpp"
#include "runtime/comm/call_signature.hpp"
#include "runtime/comm/communicator_layout.hpp"
#include "runtime/comm/join_start.hpp"
#include "runtime/comm/kernel_rules.hpp"
#include "runtime/comm/machine_tuning.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/hosts/hosts_runtime.hpp"

namespace canopy {

class HostsCallPath final : public CallPath {
 public:
  explicit HostsCallPath(Logger log);
  ~HostsCallPath() override;  // the rails and the inside communicator, then the world's barrier

  // The rest of Communicator::join when the processes' hosts differ (`start`): the rails and the inside
  // communicator (join_hosts, each host's processes joined through `join`), then the world's layout.
  Status join(JoinStart&& start, const CommunicatorOptions& options, const JoinPath& join);

  const CommunicatorLayout& layout() const override { return layout_; }
  int own_ranks() const override { return own_ranks_; }
  int first_own_rank() const override { return first_own_rank_; }
  bool on_own_buffers() const override { return layout_.config.own_buffers; }
  bool on_peer_buffers() const override { return false; }
  const std::string& machine_key() const override { return tuning_.machine_key(); }
  std::filesystem::path tuning_path() const override { return tuning_.path(); }
  std::int64_t tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const override;

  const ProtocolTable& protocols() const override { return protocols_; }
  bool engines_take(Collective, std::uint64_t) const override { return false; }
  std::uint64_t staged_count(Collective collective, std::uint64_t count, DataType dtype, int root) override;
  Communicator::Choice choice(Collective, std::uint64_t, DataType, int, bool) override {
    return Communicator::Choice{};  // phases across hosts (CANOPY_LOG=info shows them)
  }
  CollectiveSpec spec_of(const CollectiveCall& call, bool in_place) override;

  Status run(const CollectiveCall& call) override;
  Status prepare(std::span<const CollectiveSpec> specs) override;
  Status prepare(const CollectiveCall& call) override;
  Status info(const CollectiveSpec& spec, CollectiveInfo* out) override;
  Status scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype, const void* device_scalar,
               const void* host_scalar, cudaStream_t stream) override;
  Status combining_kernels(const CombineKernels** out) override;

  Status exchange(std::string mine, std::vector<std::string>* all) override;
  Status split(int color, int key, const CommunicatorOptions& options, const JoinPath& join,
               std::unique_ptr<CallPath>* out) override;

  Status abort() override;
  Status fail(const std::string& why) override;
  void leave_at_exit() override;
  Status async_error() override;

 private:
  // Fails the communicator for `why` (`aborted`: by its user); the rails and the inside communicator stop.
  void fail_for(const std::string& why, bool aborted);

  CommunicatorLayout layout_;
  CallFailure failure_;
  std::mutex mutex_;                     // calls are serialised
  std::unique_ptr<ProcessGroup> group_;  // the world's bootstrap group (no descriptor channel)
  int first_own_rank_ = 0, own_ranks_ = 0;
  std::unique_ptr<HostsRuntime> hosts_;  // the inside communicator and the rails
  std::uint64_t calls_ = 0;              // calls made (the call number CANOPY_CHECK_CALLS=1 compares)
  MachineTuning tuning_;                 // nothing tuned across hosts
  ProtocolTable protocols_;              // no protocol of its own: a default table answers the queries
  KernelRules rules_;                    // spec_of's
};

}  // namespace canopy
