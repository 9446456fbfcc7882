// LocalCallPath (local_call_path.hpp): create's steps, what a call of a size would take, failure and teardown. The
// calls themselves are in local_call.cpp.
#include "runtime/local/local_call_path.hpp"

#include <fmt/format.h>

#include "runtime/comm/kernel_rules.hpp"
#include "runtime/comm/relay_placement.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/detect/detect_topology.hpp"
#include "runtime/transport/local_peer_memory.hpp"

namespace canopy {

LocalCallPath::LocalCallPath(Logger log) { layout_.log = std::move(log); }

LocalCallPath::~LocalCallPath() {
  kernels_.report_profile(first_own_rank(), own_ranks());
  kernels_.stop();
  kernels_.drop_offload();  // waits for the copy engines' and the host path's work
  CurrentDevice keep;
  kernels_.unload();
  peers_.reset();
}

void LocalCallPath::create(const CommunicatorOptions& options) {
  // The machine: given, or detected from the GPUs (NVML NVLink counts and CUDA P2P; the log says which).
  std::vector<GpuDevice> gpus = describe_gpus(options.devices);
  if (options.topology) {
    layout_.topology = *options.topology;
    layout_.topology.validate();
    layout_.topology_source = "given";
  } else {
    std::vector<int> ordinals;
    for (const GpuDevice& g : gpus) ordinals.push_back(g.ordinal);
    DetectedTopology detected = detect_topology(ordinals);
    layout_.topology = std::move(detected.topology);
    layout_.topology_source = "detected from " + detected.source;
    for (const std::string& note : detected.notes) layout_.log.info(LogSubsys::init, "detect: " + note);
  }
  Placement& pl = layout_.placement;
  pl = place_ranks(layout_.topology, std::move(gpus), options.gpus, !options.devices.empty());
  place_relays(layout_.topology, options.relays, options.relay_devices, &pl);
  for (const GpuDevice& g : pl.gpus)
    if (g.arch != pl.gpus[0].arch)
      layout_.log.info(
          LogSubsys::init,
          fmt::format("GPUs of different architectures ({} and {}): one kernel build each", pl.gpus[0].arch, g.arch));
  peers_ = std::make_unique<LocalPeerMemory>(pl.gpus, pl.device_of_rank);
  pl.peer = peers_->peer();
  layout_.config = resolve_config(options, pl.ranks());
  GpuKernels::Setup setup;
  setup.launch_crew = layout_.config.launch.enabled && pl.devices() > 1;
  setup.engines_take = [this](Collective c, std::uint64_t bytes) { return engines_take(c, bytes); };
  kernels_.set_up(options, *peers_, std::move(setup));
}

std::int64_t LocalCallPath::tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const {
  return kernels_.rules().tuned_chunk(collective, count, dtype);
}

// The table's sizes alone: this process's copy engines move every collective they take.
bool LocalCallPath::engines_take(Collective collective, std::uint64_t bytes) const {
  return kernels_.protocols().engine_sized(collective, bytes);
}

std::uint64_t LocalCallPath::staged_count(Collective collective, std::uint64_t count, DataType dtype, int root) {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.offload()->staged_count(collective, count, dtype, root,
                                          engines_take(collective, count * static_cast<std::uint64_t>(size_of(dtype))));
}

Communicator::Choice LocalCallPath::choice(Collective collective, std::uint64_t count, DataType dtype, int root,
                                           bool in_place) {
  return kernels_.choice(collective, count, dtype, root, in_place, mutex_);
}

CollectiveSpec LocalCallPath::spec_of(const CollectiveCall& call, bool in_place) {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.call_spec(kernels_call(call), in_place);
}

Status LocalCallPath::prepare(std::span<const CollectiveSpec> specs) {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.prepare(specs);
}

Status LocalCallPath::info(const CollectiveSpec& spec, CollectiveInfo* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.info(spec, out);
}

Status LocalCallPath::scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype,
                            const void* device_scalar, const void* host_scalar, cudaStream_t stream) {
  if (Status s = check_own_rank("scale", rank, first_own_rank(), own_ranks()); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.failed()) return failure_.status();
  return kernels_.scale(rank, out, in, count, dtype, device_scalar, host_scalar, stream);
}

Status LocalCallPath::combining_kernels(const CombineKernels** out) {
  return kernels_.combining_kernels(first_own_rank(), out);
}

Status LocalCallPath::exchange(std::string mine, std::vector<std::string>* all) {
  std::lock_guard<std::mutex> lock(mutex_);  // as across processes, where the bootstrap is one thread's at a time
  *all = {std::move(mine)};
  return Status();
}

Status LocalCallPath::split(int, int, const CommunicatorOptions&, const JoinPath&, std::unique_ptr<CallPath>*) {
  return Status(StatusCode::unsupported,
                "split is for communicators joined across processes (Communicator::join); a single-process "
                "communicator makes a subset of its GPUs with CommunicatorOptions::gpus");
}

// Fails the communicator, then waits for its launches (they end promptly: every wait gives up).
Status LocalCallPath::fail_and_drain(const std::string& why, bool aborted) {
  failure_.fail(why, aborted, layout_.log, [this] { kernels_.abort_launches(); });
  std::lock_guard<std::mutex> lock(mutex_);
  kernels_.drain();
  return Status();
}

Status LocalCallPath::abort() {
  return fail_and_drain("the communicator was aborted (Communicator::abort): every call fails from now on", true);
}

Status LocalCallPath::fail(const std::string& why) { return fail_and_drain(why, false); }

void LocalCallPath::leave_at_exit() {
  // CANOPY_WATCHDOG_S: its thread reads the GPUs. Calls use it under the mutex; a thread stuck in a call keeps it.
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (lock.owns_lock()) kernels_.stop_watchdog();
}

}  // namespace canopy
