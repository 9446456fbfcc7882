// Communicator calls: run() checks the call, chooses its protocol once (ProtocolTable::choose), sends a large call's
// share to the offload paths (copy engines, host staging), finds the prepared kernel (CollectiveCache) and launches it
// (launch/), then hands it to the watchdog. Also the five collectives' entry points and the protocol queries.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "core/error.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/communicator_state.hpp"
#include "runtime/comm/kernel_rules.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

// The per-rank size that sets the message class of `call` made with `count` elements (a program's: its larger buffer).
static std::uint64_t class_bytes(const CollectiveCall& call, std::uint64_t count, int ranks) {
  return call.program ? size_bytes(*call.program, count, call.dtype)
                      : size_bytes(call.collective, count, call.dtype, ranks);
}

std::int64_t LegacyState::tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const {
  if (config.chunk_fixed || !tuning || tuning->entries().empty()) return 0;
  const std::uint64_t bucket = tuning_bucket(size_bytes(collective, count, dtype, ranks()));
  const std::optional<TuningEntry> e = tuning->find({machine, collective, dtype, bucket});
  return e ? e->chunk_bytes : 0;
}

ProtocolPick LegacyState::pick(const CollectiveCall& call, std::uint64_t count, bool in_place_call) const {
  if (call.program) return ProtocolPick{};
  return protocols.choose(call.collective, size_bytes(call.collective, count, call.dtype, ranks()), in_place_call);
}

CollectiveSpec LegacyState::call_spec(const CollectiveCall& call, bool in_place_call,
                                              std::uint64_t whole_count) {
  return kernel_spec(call, pick(call, call.count, group ? false : in_place_call), whole_count);
}

CollectiveSpec LegacyState::kernel_spec(const CollectiveCall& call, const ProtocolPick& pick,
                                                std::uint64_t whole_count) {
  const std::uint64_t bytes = class_bytes(call, std::max(whole_count, call.count), ranks());
  CollectiveSpec spec{call.collective, call.dtype, call.op, call.root, large_at(config, bytes)};
  spec.huge = huge_at(config, bytes);
  if (call.program) {
    // Not owned: canonical() copies it the first time, and only compares it with that copy afterwards.
    spec.program = std::shared_ptr<const algo::Program>(std::shared_ptr<const algo::Program>(), call.program);
    return cache->canonical(spec);
  }
  if (call.count > 0) spec = with_protocol(spec, pick);
  spec = as_run(spec);
  if (!plan_free(spec))
    spec.chunk_bytes = call.chunk_bytes > 0 ? call.chunk_bytes : tuned_chunk(call.collective, call.count, call.dtype);
  return spec;
}

// Debugging graphs across processes: once the kernels count their own launches, each process's count of a protocol
// must agree with every other's before each eager launch. This reads this process's counters after the stream's
// earlier work (a wait, so only at debug level) and logs them.
void LegacyState::log_launch_counters(const PreparedCollective& p, const CollectiveCall& call,
                                              const LaunchTarget& target) {
  const std::span<unsigned long long* const> counters = launch_counters(p, target);
  for (std::size_t d = 0; d < counters.size(); ++d) {
    if (!target.here.empty() && !target.here[d]) continue;
    unsigned long long finished = 0;
    cudaStream_t stream = call.streams[target.first_rank[d]];
    cudaError_t e = cudaSetDevice(target.ordinal[d]);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(&finished, counters[d], sizeof finished, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      log.debug(LogSubsys::run, fmt::format("{} count {}: reading device {}'s launch counter failed: {}",
                                            call_name(call), call.count, d, cudaGetErrorString(e)));
      continue;
    }
    log.debug(LogSubsys::run, fmt::format("{} count {}: device {}: {} launches finished on the counter {} uses; this "
                                          "one takes epoch {}",
                                          call_name(call), call.count, d, finished, p.built->source.entry,
                                          finished + 1));
  }
}

CollectiveSpec LegacyState::as_run(CollectiveSpec spec) const {
  if (on_own_buffers() && !spec.program && !spec.low_latency && !spec.ll128 && !spec.peer_buffers)
    spec.own_buffers = true;
  return spec;
}

Status LegacyState::launch_kernels(PreparedCollective& p, const CollectiveSpec& spec,
                                           const CollectiveCall& call, bool capturing, std::uint64_t staged) {
  LaunchTarget target{placement.ordinals, placement.first_rank, memory->scratch(), &order};
  target.stream_id = call_stream_ids;
  target.here = placement.here;
  target.abort = abort_word ? abort_word->device() : nullptr;
  target.crew = crew.get();
  target.capturing = capturing;
  device_epochs = device_epochs || capturing;  // from the first capture on, for good
  target.device_epochs = device_epochs;
  std::uint64_t api_ns = 0;
  if (profile.on) target.api_ns = &api_ns;
  if (spec.low_latency || spec.ll128) {  // its memory was made when the kernel was loaded
    LineMemory& m = spec.low_latency ? memory->low_latency() : memory->ll128();
    target.scratch = m.lines;
    target.flags = m.acks;
    target.launches = m.launches;
    target.epoch = &m.epoch;
  } else if (spec.direct) {
    DirectMemory& m = memory->direct();
    if (spec.own_buffers) target.scratch = inbox;  // the inbox kernels' inboxes (ready_inboxes)
    // Across processes the kernels on the callers' buffers (CANOPY_PEER_BUFFERS) count on words of their own.
    target.flags = spec.peer_buffers ? m.peer_flags : m.flags;
    target.launches = m.launches;
    target.epoch = &m.epoch;
  }
  // launch() leaves the caller's thread on the device it found; the debug read-back below and the watchdog's events
  // switch devices, so they put it back (one device query a call less where neither runs: small calls feel it).
  std::optional<CurrentDevice> keep;
  if (watchdog || log.enabled(LogLevel::debug, LogSubsys::run)) keep.emplace();
  if (device_epochs && !capturing && log.enabled(LogLevel::debug, LogSubsys::run)) log_launch_counters(p, call, target);
  bool partial = false;
  Status s = launch(p, call, target, &partial);
  profile.mark(CallProfile::launch);
  profile.shift(CallProfile::launch, CallProfile::api, api_ns);
  if (partial && !capturing) {  // a failed capture leaves nothing waiting: the graph is never made
    broken = true;
    broken_why = s.message();
  }
  if (s.ok() && watchdog && !capturing)
    watchdog->watch(p, call, placement.ordinals, placement.first_rank, launch_flags(p, target),
                    launch_counters(p, target), device_epochs, placement.here);
  if (s.ok() && log.enabled(LogLevel::debug, LogSubsys::run))
    log.debug(LogSubsys::run, fmt::format("{} count {} launch {} of {}{}", call_name(call), call.count, p.epoch,
                                          p.built->source.entry,
                                          staged ? fmt::format(", {} elements through host memory", staged) : ""));
  return s;
}

// One rank, as NCCL's one-rank communicator: every collective leaves the input in the output, so a call is one copy on
// the rank's stream (none in place). No plan, no kernel: a planner needs two GPUs.
Status LegacyState::local_copy(const CollectiveCall& call) {
  if (call.send[0] == call.recv[0]) return Status();
  const std::uint64_t bytes = call.count * static_cast<std::uint64_t>(size_of(call.dtype));
  CurrentDevice keep;
  cudaError_t e = cudaSetDevice(placement.ordinals[0]);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(call.recv[0], call.send[0], bytes, cudaMemcpyDeviceToDevice, call.streams[0]);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status(StatusCode::cuda_error, fmt::format("{} count {} on one rank: the copy from send to recv failed: {}",
                                                      call_name(call), call.count, cudaGetErrorString(e)));
  }
  if (log.enabled(LogLevel::debug, LogSubsys::run))
    log.debug(LogSubsys::run, fmt::format("{} count {}: one rank, a local copy", call_name(call), call.count));
  return Status();
}

// avg (as ncclAvg): the call runs as a sum, then each result is divided by the rank count on its rank's stream, by the
// combining module's divide kernel (loaded once per GPU architecture; a capture cannot load it, so the first avg call
// must be eager or prepared).
Status LegacyState::divide_results(const CollectiveCall& call) {
  const int n = ranks();
  if (n == 1 || call.count == 0) return Status();
  CurrentDevice keep;
  for (std::size_t i = 0; i < call.recv.size(); ++i) {
    const int r = first_own_rank() + static_cast<int>(i);
    const std::uint64_t count = recv_elements(call.collective, call.count, n, r, call.root);
    if (count == 0) continue;
    const int device = placement.device_of_rank[r];
    const std::string& arch = placement.gpus[device].arch;
    if (!offload->combine_loaded(arch)) {
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(call.streams[i], &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone)
        return Status(StatusCode::unsupported,
                      fmt::format("{} avg: the division by the ranks needs its kernel, not loaded yet, and a CUDA "
                                  "graph capture cannot load one: make one eager avg call (or prepare(call)) first",
                                  call_name(call)));
    }
    const CombineKernels* kernels = nullptr;
    if (Status s = offload->combine_for(arch, &kernels); !s.ok()) return s;
    if (cudaError_t e = cudaSetDevice(placement.ordinals[device]); e != cudaSuccess)
      return cuda_status(e, call_name(call) + " avg: selecting rank " + std::to_string(r) + "'s GPU");
    if (Status s = kernels->divide(call.recv[i], count, call.dtype, n, call.streams[i]); !s.ok()) return s;
  }
  return Status();
}

Status LegacyCallPath::run(const CollectiveCall& given) {
  LegacyState& st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);
  st.profile.start();  // under the lock: calls from several threads take turns
  if (st.broken) return Status(StatusCode::cuda_error, st.broken_why);
  if (st.failed) return st.failure_status();
  st.profile.mark(CallProfile::entry);
  Status s;
  if (st.hosts) {  // several hosts: the phases (avg included)
    // CANOPY_CHECK_CALLS=1 compares the call across every host through the world's bootstrap (the shared pages of
    // the default check cover each host's processes only: its inside communicator's, on the phases' calls).
    if (st.config.check_calls == CallCheck::round_trip) {
      ++st.calls;
      s = st.agree_on_call(st.signature_of(given));
    }
    if (s.ok()) s = st.hosts->run(given);
    if (!s.ok() && s.code() == StatusCode::remote_error) st.fail(s.message());
  } else if (runs_as_sum(given)) {
    const CollectiveCall sum = kernels_call(given);
    s = st.group ? st.run_in_processes(sum) : st.run_here(sum);
    if (s.ok()) s = st.divide_results(given);
  } else {
    s = st.group ? st.run_in_processes(given) : st.run_here(given);
  }
  st.profile.end();
  return s;
}

Status LegacyState::run_here(const CollectiveCall& given) {
  LegacyState& st = *this;
  bool capturing = false;
  st.call_stream_ids.resize(st.ranks());
  if (Status s = check_call(given, st.placement.ordinal_of_rank, st.oracle, &capturing, st.call_stream_ids); !s.ok())
    return s;
  st.profile.mark(CallProfile::check);
  if (given.count == 0) return Status();
  if (st.ranks() == 1 && !given.program) return st.local_copy(given);
  const bool in_place_call = is_in_place(given);
  ProtocolPick pick = st.pick(given, given.count, in_place_call);
  // Copy engines: on two GPUs, a large broadcast, or a reduce or allreduce out of place (the receive buffer is where
  // the other GPU's input lands). Hybrid transfers: a large broadcast's or reduce's tail crosses PCIe through host
  // memory while the kernels or engines move the rest. Captured into a CUDA graph, every call runs on the kernels
  // alone: the offload paths' side streams and events are not captured.
  const bool on_engines = !capturing && pick.copy_engine &&
                          (given.collective == Collective::broadcast || !in_place_call);
  const std::uint64_t staged =
      given.program || capturing ? 0
                                 : st.offload->staged_count(given.collective, given.count, given.dtype, given.root,
                                                            on_engines);
  CollectiveCall call = given;
  call.count -= staged;
  std::vector<cudaStream_t> device_streams;
  if (staged > 0) {
    for (int first : st.placement.first_rank) device_streams.push_back(given.streams[first]);
    if (Status s = st.offload->ready_staging(given.collective, given.root); !s.ok()) return s;
    if (Status s = st.offload->fork_staging(device_streams); !s.ok()) return s;
    pick = st.pick(call, call.count, in_place_call);  // the kernels' share
  }
  if (on_engines) {
    Status s = st.offload->run_on_engines(call, &st.broken);
    if (!s.ok() && st.broken) st.broken_why = s.message();
    if (s.ok() && st.log.enabled(LogLevel::debug, LogSubsys::run))
      st.log.debug(LogSubsys::run, fmt::format("{} count {} on the copy engines{}", call_name(call), call.count,
                                               staged ? fmt::format(", {} elements through host memory", staged) : ""));
    if (s.ok() && staged > 0) s = st.offload->stage(given, staged, device_streams, true);
    return s;
  }
  const CollectiveSpec spec = st.kernel_spec(call, pick, given.count);
  PreparedCollective* p = spec.program ? nullptr : st.cache->repeat(spec);
  // A capture cannot compile, allocate or wait for the GPU (cudaMalloc and stream waits are not capturable): what
  // it launches must be ready.
  if (!p && capturing && !(p = st.cache->find(spec)))
    return Status(StatusCode::unsupported,
                  fmt::format("{}: count {} needs the kernel for {}, not loaded yet, and a CUDA graph capture cannot "
                              "compile and load one: load it with Communicator::prepare(call) before capturing (an "
                              "eager call of this size loads it too, unless the copy engines move it)",
                              call_name(call), call.count, spec_text(spec)));
  if (!p) {
    if (Status s = st.get(spec, &p); !s.ok()) return s;
    if (!spec.program) st.cache->remember(spec, p);
  }
  st.profile.mark(CallProfile::choose);
  Status s = st.launch_kernels(*p, spec, call, capturing, staged);
  st.profile.mark(CallProfile::launch);
  if (s.ok() && staged > 0) s = st.offload->stage(given, staged, device_streams, false);
  return s;
}

Status LegacyCallPath::prepare(const CollectiveCall& call) {
  LegacyState& st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.broken) return Status(StatusCode::cuda_error, st.broken_why);
  if (st.hosts)
    return Status(StatusCode::unsupported,
                  fmt::format("{}: prepare(call) is not there yet across hosts: make one eager call of each kind "
                              "before capturing it into a CUDA graph",
                              call_name(call)));
  const CollectiveCall kernels = kernels_call(call);
  if (st.group) {  // this process's ranks' buffers, made whole; every process prepares the same calls
    if (Status s = st.prepare_in_processes(kernels); !s.ok()) return s;
  } else {
    if (Status s = check_call(call, st.placement.ordinal_of_rank, st.oracle); !s.ok()) return s;
  }
  if (call.count == 0 || (st.ranks() == 1 && !call.program)) return Status();  // one rank: nothing to load
  if (runs_as_sum(call))
    for (const GpuDevice& g : st.placement.gpus) {  // avg's division kernel
      const CombineKernels* kernels = nullptr;
      if (Status s = st.offload->combine_for(g.arch, &kernels); !s.ok()) return s;
    }
  if (st.group) return Status();  // its kernel and areas are ready
  PreparedCollective* p = nullptr;
  return st.get(st.call_spec(kernels, is_in_place(call)), &p);
}

CollectiveSpec LegacyCallPath::spec_of(const CollectiveCall& call, bool in_place_call) {
  LegacyState& st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);
  return st.call_spec(kernels_call(call), in_place_call);
}

std::uint64_t LegacyCallPath::staged_count(Collective collective, std::uint64_t count, DataType dtype, int root) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (!state_->offload) return 0;  // across hosts: no host path
  if (state_->group && !state_->rings_move(collective)) return 0;  // across processes (State::rings_move)
  return state_->offload->staged_count(collective, count, dtype, root,
                                       engines_take(collective, count * static_cast<std::uint64_t>(size_of(dtype))));
}

}  // namespace canopy
