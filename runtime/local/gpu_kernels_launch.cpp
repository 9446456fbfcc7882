// GpuKernels (gpu_kernels.hpp), a call's kernel (its spec, inline there: KernelRules, a program's canonical copy):
// finding or preparing it, its launch on every GPU this process drives with the memory its protocol shares (then the
// watchdog), a one-rank communicator's copy, avg's division and PreMulSum's scale on the element-wise kernels, and
// what a call of a size would take (for logs).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <optional>

#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/local/gpu_kernels.hpp"

namespace canopy {

CollectiveSpec GpuKernels::call_spec(const CollectiveCall& call, bool in_place_call, std::uint64_t whole_count) {
  return kernel_spec(call, rules_.pick(call, call.count, in_place_call), whole_count);
}

Status GpuKernels::kernel_not_repeated(const CollectiveSpec& spec, const CollectiveCall& call, bool capturing,
                                       const char* eager_fix, PreparedCollective** out) {
  PreparedCollective* p = nullptr;
  // A capture cannot compile, allocate or wait for the GPU (cudaMalloc and stream waits are not capturable): what
  // it launches must be ready.
  if (capturing && !(p = cache_->find(spec)))
    return Status(StatusCode::unsupported,
                  fmt::format("{}: count {} needs the kernel for {}, not loaded yet, and a CUDA graph capture cannot "
                              "compile and load one: {}",
                              call_name(call), call.count, spec_text(spec), eager_fix));
  if (!p) {
    if (Status s = get(spec, &p); !s.ok()) return s;
    if (!spec.program) cache_->remember(spec, p);
  }
  *out = p;
  return Status();
}

// Debugging graphs across processes: once the kernels count their own launches, each process's count of a protocol
// must agree with every other's before each eager launch. This reads this process's counters after the stream's
// earlier work (a wait, so only at debug level) and logs them.
void GpuKernels::log_launch_counters(const PreparedCollective& p, const CollectiveCall& call,
                                     const LaunchTarget& target) {
  const Logger& log = layout_.log;
  const std::span<unsigned long long* const> counters = launch_counters(p, target);
  for (std::size_t d = 0; d < counters.size(); ++d) {
    if (!target.here.empty() && !target.here[d]) continue;
    unsigned long long finished = 0;
    cudaStream_t stream = call.streams[target.first_rank[d]];
    cudaError_t e = cudaSetDevice(target.ordinal[d]);
    if (e == cudaSuccess) e = cudaMemcpyAsync(&finished, counters[d], sizeof finished, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      log.debug(LogSubsys::run, fmt::format("{} count {}: reading device {}'s launch counter failed: {}",
                                            call_name(call), call.count, d, cudaGetErrorString(e)));
      continue;
    }
    log.debug(LogSubsys::run,
              fmt::format("{} count {}: device {}: {} launches finished on the counter {} uses; this "
                          "one takes epoch {}",
                          call_name(call), call.count, d, finished, p.built->source.entry, finished + 1));
  }
}

Status GpuKernels::launch(PreparedCollective& p, const CollectiveSpec& spec, const CollectiveCall& call, bool capturing,
                          std::uint64_t staged, std::span<void* const> inbox) {
  const Placement& placement = layout_.placement;
  const Logger& log = layout_.log;
  LaunchTarget target{placement.ordinals, placement.first_rank, memory_->scratch(), &order_};
  target.stream_id = call_stream_ids_;
  target.here = placement.here;
  target.abort = abort_word_ ? abort_word_->device() : nullptr;
  target.crew = crew_.get();
  target.capturing = capturing;
  device_epochs_ = device_epochs_ || capturing;  // from the first capture on, for good
  target.device_epochs = device_epochs_;
  std::uint64_t api_ns = 0;
  if (profile_.on) target.api_ns = &api_ns;
  if (spec.low_latency || spec.ll128) {  // its memory was made when the kernel was loaded
    LineMemory& m = spec.low_latency ? memory_->low_latency() : memory_->ll128();
    target.scratch = m.lines;
    target.flags = m.acks;
    target.launches = m.launches;
    target.epoch = &m.epoch;
  } else if (spec.direct) {
    DirectMemory& m = memory_->direct();
    if (spec.own_buffers) target.scratch = inbox;  // the inbox kernels' inboxes
    // Across processes the kernels on the callers' buffers (CANOPY_PEER_BUFFERS) count on words of their own.
    target.flags = spec.peer_buffers ? m.peer_flags : m.flags;
    target.launches = m.launches;
    target.epoch = &m.epoch;
  }
  // launch() leaves the caller's thread on the device it found; the debug read-back below and the watchdog's events
  // switch devices, so they put it back (one device query a call less where neither runs: small calls feel it).
  if (!p.relay_rings.empty()) {  // Blink+: its relay participants' rings, in their relay GPUs' areas
    relay_scratch_->rings_of(p, &relay_rings_);
    target.relay_scratch = relay_rings_;
  }
  std::optional<CurrentDevice> keep;
  if (watchdog_ || log.enabled(LogLevel::debug, LogSubsys::run)) keep.emplace();
  if (device_epochs_ && !capturing && log.enabled(LogLevel::debug, LogSubsys::run))
    log_launch_counters(p, call, target);
  bool partial = false;
  Status s = canopy::launch(p, call, target, &partial);
  profile_.mark(CallProfile::launch);
  profile_.shift(CallProfile::launch, CallProfile::api, api_ns);
  if (partial && !capturing) {  // a failed capture leaves nothing waiting: the graph is never made
    broken_ = true;
    broken_why_ = s.message();
  }
  if (s.ok() && watchdog_ && !capturing)
    watchdog_->watch(p, call, placement.ordinals, placement.first_rank, launch_flags(p, target),
                     launch_counters(p, target), device_epochs_, placement.here);
  if (s.ok() && log.enabled(LogLevel::debug, LogSubsys::run))
    log.debug(LogSubsys::run,
              fmt::format("{} count {} launch {} of {}{}", call_name(call), call.count, p.epoch, p.built->source.entry,
                          staged ? fmt::format(", {} elements through host memory", staged) : ""));
  return s;
}

// One rank, as NCCL's one-rank communicator: every collective leaves the input in the output, so a call is one copy on
// the rank's stream (none in place). No plan, no kernel: a planner needs two GPUs.
Status GpuKernels::local_copy(const CollectiveCall& call) {
  if (call.send[0] == call.recv[0]) return Status();
  const std::uint64_t bytes = call.count * static_cast<std::uint64_t>(size_of(call.dtype));
  CurrentDevice keep;
  cudaError_t e = cudaSetDevice(layout_.placement.ordinals[0]);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(call.recv[0], call.send[0], bytes, cudaMemcpyDeviceToDevice, call.streams[0]);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status(StatusCode::cuda_error, fmt::format("{} count {} on one rank: the copy from send to recv failed: {}",
                                                      call_name(call), call.count, cudaGetErrorString(e)));
  }
  if (layout_.log.enabled(LogLevel::debug, LogSubsys::run))
    layout_.log.debug(LogSubsys::run, fmt::format("{} count {}: one rank, a local copy", call_name(call), call.count));
  return Status();
}

// avg (as ncclAvg): the call runs as a sum, then each result is divided by the rank count on its rank's stream, by the
// combining module's divide kernel (loaded once per GPU architecture; a capture cannot load it, so the first avg call
// must be eager or prepared).
Status GpuKernels::divide_results(const CollectiveCall& call, int first_own_rank) {
  const Placement& placement = layout_.placement;
  const int n = layout_.ranks();
  if (n == 1 || call.count == 0) return Status();
  CurrentDevice keep;
  for (std::size_t i = 0; i < call.recv.size(); ++i) {
    const int r = first_own_rank + static_cast<int>(i);
    const std::uint64_t count = recv_elements(call.collective, call.count, n, r, call.root);
    if (count == 0) continue;
    const int device = placement.device_of_rank[r];
    const std::string& arch = placement.gpus[device].arch;
    if (!offload_->combine_loaded(arch)) {
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(call.streams[i], &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone)
        return Status(StatusCode::unsupported,
                      fmt::format("{} avg: the division by the ranks needs its kernel, not loaded yet, and a CUDA "
                                  "graph capture cannot load one: make one eager avg call (or prepare(call)) first",
                                  call_name(call)));
    }
    const CombineKernels* kernels = nullptr;
    if (Status s = offload_->combine_for(arch, &kernels); !s.ok()) return s;
    if (cudaError_t e = cudaSetDevice(placement.ordinals[device]); e != cudaSuccess)
      return cuda_status(e, call_name(call) + " avg: selecting rank " + std::to_string(r) + "'s GPU");
    if (Status s = kernels->divide(call.recv[i], count, call.dtype, n, call.streams[i]); !s.ok()) return s;
  }
  return Status();
}

Status GpuKernels::ready_division() {
  for (const GpuDevice& g : layout_.placement.gpus) {
    const CombineKernels* kernels = nullptr;
    if (Status s = offload_->combine_for(g.arch, &kernels); !s.ok()) return s;
  }
  return Status();
}

Status GpuKernels::combining_kernels(int rank, const CombineKernels** out) {
  const Placement& placement = layout_.placement;
  return offload_->combine_for(placement.gpus[placement.device_of_rank[rank]].arch, out);
}

Status GpuKernels::scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype,
                         const void* device_scalar, const void* host_scalar, cudaStream_t stream) {
  const Placement& placement = layout_.placement;
  const int device = placement.device_of_rank[rank];
  const std::string& arch = placement.gpus[device].arch;
  if (!offload_->combine_loaded(arch)) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone)
      return Status(StatusCode::unsupported,
                    "PreMulSum: its scale kernel is not loaded yet, and a CUDA graph capture cannot load one: make "
                    "one eager call with a PreMulSum operator first");
  }
  const CombineKernels* kernels = nullptr;
  if (Status s = offload_->combine_for(arch, &kernels); !s.ok()) return s;
  CurrentDevice keep;
  if (const cudaError_t e = cudaSetDevice(placement.ordinals[device]); e != cudaSuccess)
    return cuda_status(e, fmt::format("PreMulSum: selecting rank {}'s GPU", rank));
  return kernels->scale(out, in, count, dtype, device_scalar, host_scalar, stream);
}

Status GpuKernels::info(const CollectiveSpec& spec, CollectiveInfo* out) {
  if (layout_.ranks() == 1 && !spec.program)
    return Status(
        StatusCode::unsupported,
        fmt::format("{}: a communicator of one rank runs no kernel (every call is a local copy)", spec_text(spec)));
  PreparedCollective* p = nullptr;
  if (Status s = get(spec, &p); !s.ok()) return s;
  out->plan = p->built->plan;
  out->options = p->built->schedule.options;
  out->kernel = p->built->source.entry;
  out->cache_key = p->built->cache_key;
  out->outcome = p->outcome;
  out->blocks_per_device = p->blocks;
  if (relay_scratch_) {
    out->relays = relay_scratch_->names();
    out->relay_ring_bytes = relay_bytes_needed(p->relay_rings, static_cast<int>(out->relays.size()));
    out->relay_area_bytes.clear();
    for (std::size_t k = 0; k < out->relays.size(); ++k) out->relay_area_bytes.push_back(relay_scratch_->bytes(k));
  }
  return Status();
}

Communicator::Choice GpuKernels::choice(Collective collective, std::uint64_t count, DataType dtype, int root,
                                        bool in_place, std::mutex& mutex) const {
  const std::uint64_t bytes = size_bytes(collective, count, dtype, layout_.ranks());
  const ProtocolPick pick = protocols_.choose(collective, bytes, in_place);
  Communicator::Choice c;
  c.protocol = pick.protocol;
  c.two_shot = pick.two_shot;
  c.copy_engine = pick.protocol == Protocol::planned && (collective == Collective::broadcast || !in_place) &&
                  engines_take(collective, bytes);
  if (pick.protocol == Protocol::planned) {
    std::lock_guard<std::mutex> lock(mutex);
    if (const Plan* plan = plans_ ? plans_->find(collective, root) : nullptr)
      c.trees = static_cast<int>(plan->trees.size());
  }
  return c;
}

}  // namespace canopy
