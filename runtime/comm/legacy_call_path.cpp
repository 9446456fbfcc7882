// LegacyCallPath: a joined communicator's set-up and preparation of collectives (see communicator_state.hpp). The
// calls themselves are in communicator_run.cpp.
#include "runtime/comm/communicator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "dsl/topo_writer.hpp"
#include "runtime/comm/communicator_state.hpp"
#include "runtime/comm/cuda_call_oracle.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

LegacyState::~LegacyState() {
  if (profile.on && profile.calls() > 0)
    fmt::print(stderr, "canopy: profile of ranks {}..{} of {}: {}\n", first_own_rank(), first_own_rank() + own_ranks() - 1,
               ranks(), profile.report());
  hosts.reset();  // the rails' NCCL communicators, then the inside communicator (its own processes' barrier)
  watchdog.reset();
  crew.reset();
  wait_for_launches(order, placement.ordinals);  // the monitor still watches: a lost peer ends these waits
  // No more watching once this process's work is done: a process that passes the barrier below first and exits is
  // not a loss. A peer lost during the barrier fails it through the bootstrap.
  monitor.reset();
  // Every process's kernels are done before any leaves, so none takes another's exit for a failure.
  if (group && group->bootstrap && !failed) {
    if (Status s = group->bootstrap->barrier(); !s.ok())
      log.warn(LogSubsys::init, "leaving the communicator: " + s.message());
  }
  offload.reset();  // waits for the copy engines' and the host path's work
  CurrentDevice keep;
  if (cache) cache->clear();
  memory.reset();
  destroy_device_order(order);
  if (peers) staging.release(*peers);
  if (peers) inboxes.release(*peers);
  peers.reset();
}

// What `canopy tune` chose for this machine: chunk sizes, unless the chunk is fixed, and protocol limits.
void set_up_tuning(LegacyState& st) {
  st.machine = Sha256().update(write_topo(st.topology)).hex_digest();
  st.tuning_path = TuningFile::default_path(st.builder->jit().disk().directory());
  std::string warning;
  st.tuning = std::make_unique<TuningFile>(st.tuning_path, &warning);
  if (!warning.empty()) st.log.info(LogSubsys::init, warning);
  if (!st.config.chunk_fixed && !st.tuning->entries().empty())
    st.log.info(LogSubsys::init, fmt::format("tuned chunk sizes from {}", st.tuning_path.string()));
}

// Protocol limits: options, else the environment, else tuned for this machine, else the defaults; then what the GPUs
// allow.
void set_up_protocols(LegacyState& st) {
  ProtocolFacts facts;
  facts.ranks = st.placement.ranks();
  facts.devices = st.placement.devices();
  facts.min_sms = std::numeric_limits<int>::max();
  for (const GpuDevice& g : st.placement.gpus) facts.min_sms = std::min(facts.min_sms, g.limits.sms);
  facts.no_peer_access = missing_peer_access(st.placement);
  facts.no_nvlink_hop = nvlink_hop_missing(st.placement, st.topology);
  ProtocolSettings settings = st.config.protocols;
  settings.tuned_from = st.tuning_path.string();
  // Processes on GPUs of their own run the direct protocol's inbox kernels, on their own buffers: the planned trees
  // overtake them at smaller sizes than the single-process kernels, and they take more blocks and, for broadcast and
  // reduce, pieces (direct_own_buffers_default_bytes and the two after it), each where not given.
  const int gpus = distinct_gpus(st.placement);
  const bool inbox_across_gpus = st.placement.multi_process() && st.config.own_buffers && gpus >= 2;
  if (inbox_across_gpus && !settings.direct_given) use_inbox_limits(&settings, facts.ranks);
  settings.direct_inbox = st.on_own_buffers();  // as_run
  settings.inbox_on_own_gpus = inbox_across_gpus && gpus == facts.ranks;
  if (inbox_across_gpus && !settings.direct_blocks_given)
    settings.direct.blocks_per_rank = direct_own_buffers_default_blocks();
  for (std::size_t c = 0; c < kCollectives; ++c)
    settings.inbox_piece_bytes[c] =
        st.config.inbox_piece_bytes.value_or(inbox_across_gpus ? direct_own_buffers_default_piece_bytes(
                                                                     static_cast<Collective>(c))
                                                               : 0);
  st.protocols = make_protocol_table(
      settings, facts,
      [&st](Collective c) -> std::optional<ProtocolLimits> {
        const std::optional<ProtocolEntry> e = st.tuning->find(ProtocolKey{st.machine, c});
        return e ? std::optional(e->limits) : std::nullopt;
      },
      st.log);
}

void LegacyState::fail(const std::string& why, ProcessFailure kind) {
  std::lock_guard<std::mutex> lock(failure_mutex);
  if (failed) return;
  failure = why;
  failed = true;
  if (abort_word) abort_word->set();
  if (host_ring) host_ring->release();  // no side stream waits for a lost process's ring
  if (engines_across) engines_across->release();
  if (counters) counters->publish_failure(kind, why);
  if (hosts) hosts->abort(why, kind == ProcessFailure::aborted);
  if (kind == ProcessFailure::aborted)
    log.info(LogSubsys::run, why);
  else
    log.warn(LogSubsys::run, why);
}

Status LegacyState::failure_status() {
  std::lock_guard<std::mutex> lock(failure_mutex);
  return failed ? Status(StatusCode::remote_error, failure) : Status();
}

LegacyCallPath::LegacyCallPath(std::unique_ptr<LegacyState> state) : state_(std::move(state)) {
  layout_.log = state_->log;
  layout_.topology = state_->topology;
  layout_.topology_source = state_->topology_source;
  layout_.placement = state_->placement;
  layout_.config = state_->config;
}
LegacyCallPath::~LegacyCallPath() = default;

// Everything after the placement, the transport and the configuration (st.config, resolved by the caller), the same
// for one process and several: kernel builder, tuning, protocols, memory, plans, prepared collectives, offload paths,
// launch order, helpers, watchdog.
void set_up_runtime(const CommunicatorOptions& options, LegacyState& st) {
  const Placement& pl = st.placement;
  if (pl.multi_process()) {
    // The copy engines across processes (ProcessEngines, made at the join: two processes on two GPUs, broadcasts and
    // reduces, writing into the other process's buffers) from the table's sizes (engines_take says which). The host
    // path of large broadcasts, reduces and allreduces (ProcessHostRing, made at the join) by default where the
    // processes hold two GPUs or more, and on one shared GPU only where its size is given (tests). The watchdog
    // watches each process's own launches.
    if (!st.config.hybrid.given && distinct_gpus(pl) < 2) st.config.hybrid.min_bytes = 0;
  }
  st.builder =
      std::make_unique<Builder>(options.cache_dir ? DiskCache(*options.cache_dir) : DiskCache::from_environment());
  set_up_tuning(st);
  set_up_protocols(st);
  st.oracle = cuda_call_oracle(st.config.check_pointers, &st.streams_seen);
  st.memory = std::make_unique<ProtocolMemory>(*st.peers, pl.ranks(), pl.first_rank, st.log);
  st.plans = std::make_unique<PlanCache>(st.topology, pl.rank_names, pl.devices(), st.log);
  st.cache = std::make_unique<CollectiveCache>(CollectiveCacheContext{
      &st.topology, &pl, &st.config, &st.protocols, st.plans.get(), st.builder.get(), st.peers.get(), st.log});
  st.offload = std::make_unique<Offload>(
      OffloadPlacement{&st.topology, &pl.rank_names, &pl.gpus, &pl.device_of_rank, &pl.ordinal_of_rank,
                       pl.multi_process(),
                       [&st](Collective c, std::uint64_t bytes) { return st.engines_take(c, bytes); }},
      st.config.hybrid, st.protocols, *st.plans, st.builder->jit(), st.log);
  st.abort_word = std::make_unique<AbortWord>();
  st.profile.on = st.config.profile_calls;
  st.order = make_device_order(pl.ordinals);
  if (st.config.launch.enabled && pl.devices() > 1 && !pl.multi_process())
    st.crew = std::make_unique<LaunchCrew>(pl.ordinals, st.config.launch.spin);
  if (st.config.watchdog_seconds) {
    std::vector<std::string> processes;  // across processes a device index is a process: its report names them
    if (pl.multi_process() && st.group && static_cast<int>(st.group->facts.size()) == pl.devices())
      for (std::size_t q = 0; q < st.group->facts.size(); ++q)
        processes.push_back(describe_process(st.group->facts[q], static_cast<int>(q), true));
    st.watchdog = std::make_unique<Watchdog>(*st.config.watchdog_seconds, st.log, pl.rank_names, pl.device_of_rank,
                                             std::move(processes));
  }
  if (st.log.enabled(LogLevel::info, LogSubsys::init))
    st.log.info(LogSubsys::init,
                fmt::format("topology {} ({}), {} ranks on {} {}{}: {}", st.topology.name(), st.topology_source,
                            pl.ranks(), pl.devices(), pl.multi_process() ? "processes" : "GPUs",
                            pl.ranks() > pl.devices() ? " (virtual ranks)" : "", describe_placement(pl)));
}

Status make_legacy(const CommunicatorOptions& options, const std::function<Status(LegacyState&)>& steps,
                   std::unique_ptr<CallPath>* out) {
  auto st = std::make_unique<LegacyState>();
  st->log = Logger::from_environment();
  if (options.log_sink) st->log.set_sink(options.log_sink);
  try {
    if (Status s = steps(*st); !s.ok()) return s;
  } catch (const Error& e) {
    return Status(StatusCode::invalid_argument, e.what());
  } catch (const InternalError& e) {
    return Status(StatusCode::internal, e.what());
  }
  *out = std::make_unique<LegacyCallPath>(std::move(st));
  return Status();
}

Status LegacyState::prepare(std::span<const CollectiveSpec> specs) {
  if (broken) return Status(StatusCode::cuda_error, broken_why);
  if (hosts) return Status();  // across hosts nothing is prepared ahead: the inside communicator loads at first use
  // One rank: calls are local copies (local_copy), with nothing to prepare but programs.
  // Each spec as this communicator runs it (as_run: across processes, perhaps on own buffers).
  std::vector<CollectiveSpec> kept;
  for (const CollectiveSpec& s : specs)
    if (ranks() > 1 || s.program) kept.push_back(as_run(s));
  std::vector<std::pair<CollectiveSpec, PreparedCollective*>> loaded;
  Status status = cache->prepare(kept, &loaded);
  if (group) {  // every process loads the same kernels, or none goes on (the memory below is made together)
    std::vector<std::string> keys;
    for (const auto& [spec, p] : loaded) keys.push_back(p->built->cache_key);
    if (Status agreed = agree_on_kernels(keys); !agreed.ok()) {
      for (const auto& [spec, p] : loaded) cache->erase(spec);
      return agreed;
    }
  }
  for (const auto& [spec, p] : loaded) {
    try {
      ready_memory(spec, *p);
    } catch (const Error& e) {
      cache->erase(spec);
      if (status.ok()) status = Status(StatusCode::cuda_error, fmt::format("{}: {}", spec_text(spec), e.what()));
    }
  }
  return status;
}

// The memory a newly loaded kernel shares is made here, not at its first call, where a cudaMalloc could wait for the
// caller's work on the GPU: scratch (grown after the launches using the old one), the plan-free protocol's memory,
// and the host path of large broadcasts and reduces (and across processes allreduces; their combining kernels are an
// NVRTC compile) and, in one process, the copy engines of large broadcasts, reduces and allreduces. Then every
// counter is zero before any launch (the caller's own work on its streams is not waited for).
void LegacyState::ready_memory(const CollectiveSpec& spec, const PreparedCollective& p) {
  const std::vector<RankResources>& need = p.built->source.resources;
  if (memory->scratch_short(need)) {
    wait_for_launches(order, placement.ordinals);
    memory->grow_scratch(need, /*keep_old=*/device_epochs);  // captured graphs keep naming the old scratch
  }
  if (spec.low_latency) memory->ready_low_latency(protocols.low_latency());
  if (spec.ll128) memory->ready_ll128(protocols.ll128());
  if (spec.direct) memory->ready_direct(protocols.direct(), peer_buffers_across());
  if (spec.large && !spec.program && offload->may_stage(spec.collective, spec.root))
    if (Status s = offload->ready_staging(spec.collective, spec.root); !s.ok()) throw Error(s.message());
  // Across processes the copy engines are ProcessEngines' (broadcasts, made at the join), never this process's pair.
  if (spec.large && !spec.program && !group && protocols.engine_collective(spec.collective))
    if (Status s = offload->ready_engines(spec.collective); !s.ok()) throw Error(s.message());
  peers->ready();
}

Status LegacyState::get(const CollectiveSpec& given, PreparedCollective** out) {
  const CollectiveSpec spec = cache->canonical(as_run(given));
  if ((*out = cache->find(spec))) return Status();
  const CollectiveSpec one[] = {spec};
  if (Status s = prepare(one); !s.ok()) return s;
  *out = cache->find(spec);
  return *out ? Status() : Status(StatusCode::internal, spec_text(spec) + ": prepared but not found");
}

int LegacyCallPath::own_ranks() const { return state_->own_ranks(); }
int LegacyCallPath::first_own_rank() const { return state_->first_own_rank(); }
bool LegacyCallPath::on_own_buffers() const { return state_->on_own_buffers(); }
bool LegacyCallPath::on_peer_buffers() const { return state_->peer_buffers_across(); }
int LegacyState::own_ranks() const { return group ? group->facts[group->process].ranks : ranks(); }
int LegacyState::first_own_rank() const { return group ? group->facts[group->process].first_rank : 0; }
const std::string& LegacyCallPath::machine_key() const { return state_->machine; }
std::filesystem::path LegacyCallPath::tuning_path() const { return state_->tuning_path; }
std::int64_t LegacyCallPath::tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const {
  return state_->tuned_chunk(collective, count, dtype);
}
const ProtocolTable& LegacyCallPath::protocols() const { return state_->protocols; }
bool LegacyCallPath::engines_take(Collective collective, std::uint64_t bytes) const {
  return state_->engines_take(collective, bytes);
}
Status LegacyCallPath::combining_kernels(const CombineKernels** out) {
  LegacyState& st = *state_;
  const int device = st.placement.device_of_rank[st.first_own_rank()];
  return st.offload->combine_for(st.placement.gpus[device].arch, out);
}

namespace {
// Fails the communicator, then waits for its launches (they end promptly: every wait gives up).
Status fail_and_drain(LegacyState& st, const std::string& why, ProcessFailure kind) {
  st.fail(why, kind);
  std::lock_guard<std::mutex> lock(st.mutex);
  wait_for_launches(st.order, st.placement.ordinals);
  return Status();
}
}  // namespace

Status LegacyCallPath::abort() {
  return fail_and_drain(*state_, "the communicator was aborted (Communicator::abort): every call fails from now on",
                        ProcessFailure::aborted);
}

Status LegacyCallPath::fail(const std::string& why) { return fail_and_drain(*state_, why, ProcessFailure::failed); }

void LegacyCallPath::leave_at_exit() {
  LegacyState& st = *state_;
  st.monitor.reset();   // joins its thread (it polls every 100 ms)
  if (st.hosts && st.hosts->inside) st.hosts->inside->leave_at_exit();  // across hosts: the host's own monitor
  // CANOPY_WATCHDOG_S: its thread reads the GPUs. Calls use it under the mutex; a thread stuck in a call keeps it.
  std::unique_lock<std::mutex> lock(st.mutex, std::try_to_lock);
  if (lock.owns_lock()) st.watchdog.reset();
}

Status LegacyCallPath::async_error() {
  if (Status s = state_->failure_status(); !s.ok() || !state_->hosts) return s;
  return state_->hosts->async_error();
}

Status LegacyCallPath::prepare(std::span<const CollectiveSpec> specs) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->prepare(specs);
}

Status LegacyCallPath::info(const CollectiveSpec& spec, CollectiveInfo* out) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->hosts)
    return Status(StatusCode::unsupported,
                  fmt::format("{}: a communicator across hosts runs phases, not one kernel (CANOPY_LOG=info shows "
                              "them)",
                              spec_text(spec)));
  if (state_->ranks() == 1 && !spec.program)
    return Status(StatusCode::unsupported,
                  fmt::format("{}: a communicator of one rank runs no kernel (every call is a local copy)",
                              spec_text(spec)));
  PreparedCollective* p = nullptr;
  if (Status s = state_->get(spec, &p); !s.ok()) return s;
  out->plan = p->built->plan;
  out->options = p->built->schedule.options;
  out->kernel = p->built->source.entry;
  out->cache_key = p->built->cache_key;
  out->outcome = p->outcome;
  out->blocks_per_device = p->blocks;
  return Status();
}

}  // namespace canopy
