// LocalCallPath's calls (local_call_path.hpp): run() checks the call, chooses its protocol once
// (ProtocolTable::choose), sends a large call's share to the offload paths (copy engines, host staging), finds the
// prepared kernel and launches it on every GPU (GpuKernels), then hands it to the watchdog; prepare(call) loads what
// a captured call will launch.
#include <fmt/format.h>

#include <vector>

#include "runtime/comm/kernel_rules.hpp"
#include "runtime/local/local_call_path.hpp"

namespace canopy {

Status LocalCallPath::run(const CollectiveCall& given) {
  return kernels_.run(given, mutex_, failure_, first_own_rank(),
                      [this](const CollectiveCall& call) { return run_here(call); });
}

Status LocalCallPath::run_here(const CollectiveCall& given) {
  bool capturing = false;
  kernels_.stream_ids().resize(layout_.ranks());
  if (Status s =
          check_call(given, layout_.placement.ordinal_of_rank, kernels_.oracle(), &capturing, kernels_.stream_ids());
      !s.ok())
    return s;
  CallProfile& profile = kernels_.profile();
  profile.mark(CallProfile::check);
  if (given.count == 0) return Status();
  if (layout_.ranks() == 1 && !given.program) return kernels_.local_copy(given);
  const bool in_place_call = is_in_place(given);
  ProtocolPick pick = kernels_.rules().pick(given, given.count, in_place_call);
  Offload& offload = *kernels_.offload();
  // Copy engines: on two GPUs, a large broadcast, or a reduce or allreduce out of place (the receive buffer is where
  // the other GPU's input lands). Hybrid transfers: a large broadcast's or reduce's tail crosses PCIe through host
  // memory while the kernels or engines move the rest. Captured into a CUDA graph, every call runs on the kernels
  // alone: the offload paths' side streams and events are not captured.
  const bool on_engines =
      !capturing && pick.copy_engine && (given.collective == Collective::broadcast || !in_place_call);
  const std::uint64_t staged = given.program || capturing ? 0
                                                          : offload.staged_count(given.collective, given.count,
                                                                                 given.dtype, given.root, on_engines);
  CollectiveCall call = given;
  call.count -= staged;
  std::vector<cudaStream_t> device_streams;
  if (staged > 0) {
    for (int first : layout_.placement.first_rank) device_streams.push_back(given.streams[first]);
    if (Status s = offload.ready_staging(given.collective, given.root); !s.ok()) return s;
    if (Status s = offload.fork_staging(device_streams); !s.ok()) return s;
    pick = kernels_.rules().pick(call, call.count, in_place_call);  // the kernels' share
  }
  if (on_engines) {
    Status s = offload.run_on_engines(call, kernels_.broken_flag());
    if (!s.ok() && kernels_.broken()) kernels_.set_broken_why(s.message());
    if (s.ok() && layout_.log.enabled(LogLevel::debug, LogSubsys::run))
      layout_.log.debug(LogSubsys::run,
                        fmt::format("{} count {} on the copy engines{}", call_name(call), call.count,
                                    staged ? fmt::format(", {} elements through host memory", staged) : ""));
    if (s.ok() && staged > 0) s = offload.stage(given, staged, device_streams, true);
    return s;
  }
  const CollectiveSpec spec = kernels_.kernel_spec(call, pick, given.count);
  PreparedCollective* p = nullptr;
  if (Status s = kernels_.kernel_for(spec, call, capturing,
                                     "load it with Communicator::prepare(call) before capturing (an eager call of "
                                     "this size loads it too, unless the copy engines move it)",
                                     &p);
      !s.ok())
    return s;
  profile.mark(CallProfile::choose);
  Status s = kernels_.launch(*p, spec, call, capturing, staged);
  profile.mark(CallProfile::launch);
  if (s.ok() && staged > 0) s = offload.stage(given, staged, device_streams, false);
  return s;
}

Status LocalCallPath::prepare(const CollectiveCall& call) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kernels_.broken()) return kernels_.broken_status();
  const CollectiveCall kernels = kernels_call(call);
  if (Status s = check_call(call, layout_.placement.ordinal_of_rank, kernels_.oracle()); !s.ok()) return s;
  if (call.count == 0 || (layout_.ranks() == 1 && !call.program)) return Status();  // one rank: nothing to load
  if (runs_as_sum(call))
    if (Status s = kernels_.ready_division(); !s.ok()) return s;  // avg's division kernel
  PreparedCollective* p = nullptr;
  return kernels_.get(kernels_.call_spec(kernels, is_in_place(call)), &p);
}

}  // namespace canopy
