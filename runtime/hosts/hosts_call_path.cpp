// HostsCallPath (hosts_call_path.hpp): the join's world side, every call through HostsRuntime, and the answers of a
// communicator that runs phases, not kernels of its own.
#include "runtime/hosts/hosts_call_path.hpp"

#include <fmt/format.h>

#include "runtime/comm/group_rounds.hpp"

namespace canopy {

namespace {

// N ranks, each joined to one relay by a network link: a name for the world's ranks, never planned.
Topology world_topology(int nranks, int hosts) {
  Topology t(fmt::format("hosts-{}-ranks-{}", hosts, nranks));
  const NodeId network = t.relay("network");
  for (NodeId g : t.gpus(nranks)) t.link(g, network, Bandwidth{1, "net"});
  t.validate();
  return t;
}

}  // namespace

HostsCallPath::HostsCallPath(Logger log) { layout_.log = std::move(log); }

HostsCallPath::~HostsCallPath() {
  hosts_.reset();  // the rails' NCCL communicators, then the inside communicator (its own processes' barrier)
  // Every process's work is done before any leaves, so none takes another's exit for a failure.
  if (group_ && group_->bootstrap && !failure_.failed()) {
    if (Status s = group_->bootstrap->barrier(); !s.ok())
      layout_.log.warn(LogSubsys::init, "leaving the communicator: " + s.message());
  }
}

Status HostsCallPath::join(JoinStart&& start, const CommunicatorOptions& options, const JoinPath& join) {
  std::unique_ptr<ProcessGroup> group = std::move(start.group);
  // A call waiting for the other processes through the root stops waiting once this communicator fails.
  group->bootstrap->set_give_up([this] { return failure_.failed(); });
  const int nranks = group->facts.at(0).nranks;
  const int ordinal = start.ordinal;
  if (Status s = join_hosts(*group, options, start.own_ranks, ordinal, layout_.log, join, &hosts_); !s.ok()) return s;
  const int hosts = hosts_->layout.host_count();
  layout_.topology = world_topology(nranks, hosts);
  layout_.topology_source = fmt::format("{} hosts: Canopy's plans inside each, the real NCCL between them", hosts);
  Placement& pl = layout_.placement;
  for (std::size_t p = 0; p < group->facts.size(); ++p) {
    const ProcessFacts& f = group->facts[p];
    pl.gpus.push_back(f.gpu);
    pl.ordinals.push_back(ordinal);
    pl.first_rank.push_back(f.first_rank);
    pl.here.push_back(static_cast<int>(p) == group->process ? 1 : 0);
    for (int r = 0; r < f.ranks; ++r) {
      pl.rank_names.push_back(fmt::format("gpu{}", f.first_rank + r));
      pl.device_of_rank.push_back(static_cast<int>(p));
      pl.ordinal_of_rank.push_back(ordinal);
    }
  }
  layout_.config = resolve_config(options, nranks);
  rules_ = KernelRules{&layout_.config, &protocols_, &tuning_, pl.ranks(), on_own_buffers()};
  group_ = std::move(group);
  first_own_rank_ = group_->facts[group_->process].first_rank;
  own_ranks_ = group_->facts[group_->process].ranks;
  return Status();
}

std::int64_t HostsCallPath::tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const {
  return rules_.tuned_chunk(collective, count, dtype);
}

std::uint64_t HostsCallPath::staged_count(Collective, std::uint64_t, DataType, int) {
  std::lock_guard<std::mutex> lock(mutex_);
  return 0;  // no host path of its own: the inside communicator's, within each phase
}

// As across processes: as if out of place.
CollectiveSpec HostsCallPath::spec_of(const CollectiveCall& call, bool) {
  std::lock_guard<std::mutex> lock(mutex_);
  const CollectiveCall kernels = kernels_call(call);
  return rules_.kernel_spec(kernels, rules_.pick(kernels, kernels.count, false));
}

Status HostsCallPath::run(const CollectiveCall& given) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.failed()) return failure_.status();
  Status s;
  // CANOPY_CHECK_CALLS=1 compares the call across every host through the world's bootstrap (the shared pages of the
  // default check cover each host's processes only: its inside communicator's, on the phases' calls).
  if (layout_.config.check_calls == CallCheck::round_trip) {
    ++calls_;
    const std::uint64_t program = given.program ? program_identity(*given.program) : 0;
    s = agree_on_call(*group_, failure_, call_signature(given, calls_, program));
  }
  if (s.ok()) s = hosts_->run(given);  // the phases, avg included
  if (!s.ok() && s.code() == StatusCode::remote_error) fail_for(s.message(), false);
  return s;
}

Status HostsCallPath::prepare(std::span<const CollectiveSpec>) {
  std::lock_guard<std::mutex> lock(mutex_);
  return Status();  // across hosts nothing is prepared ahead: the inside communicator loads at first use
}

Status HostsCallPath::prepare(const CollectiveCall& call) {
  std::lock_guard<std::mutex> lock(mutex_);
  return Status(StatusCode::unsupported,
                fmt::format("{}: prepare(call) is not there yet across hosts: make one eager call of each kind "
                            "before capturing it into a CUDA graph",
                            call_name(call)));
}

Status HostsCallPath::info(const CollectiveSpec& spec, CollectiveInfo*) {
  std::lock_guard<std::mutex> lock(mutex_);
  return Status(StatusCode::unsupported,
                fmt::format("{}: a communicator across hosts runs phases, not one kernel (CANOPY_LOG=info shows them)",
                            spec_text(spec)));
}

Status HostsCallPath::scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype,
                            const void* device_scalar, const void* host_scalar, cudaStream_t stream) {
  if (Status s = check_own_rank("scale", rank, first_own_rank(), own_ranks()); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.failed()) return failure_.status();
  return hosts_->scale(rank, out, in, count, dtype, device_scalar, host_scalar, stream);
}

Status HostsCallPath::combining_kernels(const CombineKernels**) {
  return Status(StatusCode::unsupported, "a communicator across hosts has no element-wise kernels of its own");
}

Status HostsCallPath::exchange(std::string mine, std::vector<std::string>* all) {
  return exchange_in_group(*group_, mutex_, failure_, std::move(mine), all);
}

Status HostsCallPath::split(int color, int key, const CommunicatorOptions& options, const JoinPath& join,
                            std::unique_ptr<CallPath>* out) {
  return split_group(*group_, mutex_, failure_, layout_, own_ranks(), color, key, options, join, out);
}

// The rails are aborted and the inside communicator aborted or failed for `why` (its launches end).
void HostsCallPath::fail_for(const std::string& why, bool aborted) {
  failure_.fail(why, aborted, layout_.log, [&] { hosts_->abort(why, aborted); });
}

Status HostsCallPath::abort() {
  fail_for("the communicator was aborted (Communicator::abort): every call fails from now on", true);
  std::lock_guard<std::mutex> lock(mutex_);  // returns once a call in progress has
  return Status();
}

Status HostsCallPath::fail(const std::string& why) {
  fail_for(why, false);
  std::lock_guard<std::mutex> lock(mutex_);
  return Status();
}

void HostsCallPath::leave_at_exit() { hosts_->inside->leave_at_exit(); }  // the host's own monitor

Status HostsCallPath::async_error() {
  if (Status s = failure_.status(); !s.ok()) return s;
  return hosts_->async_error();
}

}  // namespace canopy
