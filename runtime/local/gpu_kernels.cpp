// GpuKernels (gpu_kernels.hpp): the services' set-up, one step a line, preparing kernels with the memory they share,
// and the teardown steps. A call's kernel and its launch are in gpu_kernels_launch.cpp.
#include "runtime/local/gpu_kernels.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "core/byte_size.hpp"
#include "core/error.hpp"
#include "runtime/comm/cuda_call_oracle.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

namespace {
// "; relays gpu2@GPU 0 gpu3@GPU 0 (rings up to 64 MiB each)" for the init log, or "" without relays.
std::string describe_relays(const Placement& pl, std::int64_t cap) {
  if (pl.relay_names.empty()) return "";
  std::vector<std::string> placed;
  for (std::size_t k = 0; k < pl.relay_names.size(); ++k)
    placed.push_back(fmt::format("{}@GPU {}", pl.relay_names[k], pl.ordinals[pl.device_of_relay[k]]));
  return fmt::format("; relays {} (rings up to {} each)", fmt::join(placed, " "), format_byte_size(cap));
}

}  // namespace

void GpuKernels::set_up(const CommunicatorOptions& options, PeerMemory& peers, Setup setup) {
  peers_ = &peers;
  setup_ = std::move(setup);
  const Placement& pl = layout_.placement;
  const CommunicatorConfig& config = layout_.config;
  builder_ =
      std::make_unique<Builder>(options.cache_dir ? DiskCache(*options.cache_dir) : DiskCache::from_environment());
  tuning_.read(layout_.topology, builder_->jit().disk().directory(), config.chunk_fixed, layout_.log);
  set_up_protocols();
  rules_ = KernelRules{&config, &protocols_, &tuning_, pl.ranks(), setup_.own_buffers};
  oracle_ = cuda_call_oracle(config.check_pointers, &streams_seen_);
  memory_ = std::make_unique<ProtocolMemory>(peers, pl.ranks(), pl.first_rank, layout_.log);
  if (!pl.relay_names.empty()) {
    std::vector<int> relay_ordinals;
    for (int d : pl.device_of_relay) relay_ordinals.push_back(pl.ordinals[d]);
    relay_scratch_ = std::make_unique<RelayScratch>(pl.relay_names, relay_ordinals, config.relay_memory, layout_.log);
  }
  plans_ = std::make_unique<PlanCache>(layout_.topology, pl.rank_names, pl.devices(), layout_.log, pl.relay_names);
  cache_ = std::make_unique<CollectiveCache>(CollectiveCacheContext{&layout_.topology, &pl, &config, &protocols_,
                                                                    plans_.get(), builder_.get(), &peers, layout_.log});
  offload_ =
      std::make_unique<Offload>(OffloadPlacement{&layout_.topology, &pl.rank_names, &pl.gpus, &pl.device_of_rank,
                                                 &pl.ordinal_of_rank, setup_.across_processes, setup_.engines_take},
                                config.hybrid, protocols_, *plans_, builder_->jit(), layout_.log);
  abort_word_ = std::make_unique<AbortWord>();
  profile_.on = config.profile_calls;
  order_ = make_device_order(pl.ordinals);
  if (setup_.launch_crew) crew_ = std::make_unique<LaunchCrew>(pl.ordinals, config.launch.spin);
  if (config.watchdog_seconds)
    watchdog_ = std::make_unique<Watchdog>(*config.watchdog_seconds, layout_.log, pl.rank_names, pl.device_of_rank,
                                           std::move(setup_.watched));
  if (layout_.log.enabled(LogLevel::info, LogSubsys::init))
    layout_.log.info(LogSubsys::init,
                     fmt::format("topology {} ({}), {} ranks on {} {}{}: {}{}", layout_.topology.name(),
                                 layout_.topology_source, pl.ranks(), pl.devices(), setup_.devices_are,
                                 pl.ranks() > pl.devices() ? " (virtual ranks)" : "", setup_.describe(pl),
                                 describe_relays(pl, config.relay_memory)));
}

// Protocol limits: options, else the environment, else tuned for this machine, else the defaults; then what the GPUs
// allow.
void GpuKernels::set_up_protocols() {
  const Placement& pl = layout_.placement;
  const CommunicatorConfig& config = layout_.config;
  ProtocolFacts facts;
  facts.ranks = pl.ranks();
  facts.devices = pl.devices();
  facts.min_sms = std::numeric_limits<int>::max();
  for (const GpuDevice& g : pl.gpus) facts.min_sms = std::min(facts.min_sms, g.limits.sms);
  facts.no_peer_access = missing_peer_access(pl);
  facts.no_nvlink_hop = nvlink_hop_missing(pl, layout_.topology);
  ProtocolSettings settings = config.protocols;
  settings.tuned_from = tuning_.path().string();
  // Processes on GPUs of their own run the direct protocol's inbox kernels, on their own buffers: the planned trees
  // overtake them at smaller sizes than the single-process kernels, and they take more blocks and, for broadcast and
  // reduce, pieces (direct_own_buffers_default_bytes and the two after it), each where not given.
  const int gpus = distinct_gpus(pl);
  const bool inbox_across_gpus = setup_.inbox_across_gpus;
  if (inbox_across_gpus && !settings.direct_given) use_inbox_limits(&settings, facts.ranks);
  settings.direct_inbox = setup_.own_buffers;  // KernelRules::as_run
  settings.inbox_on_own_gpus = inbox_across_gpus && gpus == facts.ranks;
  if (inbox_across_gpus && !settings.direct_blocks_given)
    settings.direct.blocks_per_rank = direct_own_buffers_default_blocks();
  for (std::size_t c = 0; c < kCollectives; ++c)
    settings.inbox_piece_bytes[c] = config.inbox_piece_bytes.value_or(
        inbox_across_gpus ? direct_own_buffers_default_piece_bytes(static_cast<Collective>(c)) : 0);
  protocols_ = make_protocol_table(
      settings, facts, [this](Collective c) { return tuning_.limits(c); }, layout_.log);
}

Status GpuKernels::prepare(std::span<const CollectiveSpec> specs) {
  if (broken_) return broken_status();
  // One rank: calls are local copies (local_copy), with nothing to prepare but programs.
  // Each spec as this communicator runs it (as_run: across processes, perhaps on own buffers).
  std::vector<CollectiveSpec> kept;
  for (const CollectiveSpec& s : specs)
    if (layout_.ranks() > 1 || s.program) kept.push_back(rules_.as_run(s));
  std::vector<std::pair<CollectiveSpec, PreparedCollective*>> loaded;
  Status status = cache_->prepare(kept, &loaded);
  // Every process loads the same kernels, or none goes on (the memory below is made together).
  std::vector<std::string> keys;
  for (const auto& [spec, p] : loaded) keys.push_back(p->built->cache_key);
  if (Status agreed = setup_.agree(keys); !agreed.ok()) {
    for (const auto& [spec, p] : loaded) cache_->erase(spec);
    return agreed;
  }
  for (const auto& [spec, p] : loaded) {
    try {
      ready_memory(spec, *p);
    } catch (const Error& e) {
      cache_->erase(spec);
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
void GpuKernels::ready_memory(const CollectiveSpec& spec, const PreparedCollective& p) {
  // The ranks' scratch; relay participants (after the ranks) have their relay GPUs' areas.
  const std::vector<RankResources>& all = p.built->source.resources;
  const std::vector<RankResources> need(all.begin(), all.begin() + std::min<std::size_t>(all.size(), layout_.ranks()));
  if (memory_->scratch_short(need)) {
    wait_for_launches(order_, layout_.placement.ordinals);
    memory_->grow_scratch(need, /*keep_old=*/device_epochs_);  // captured graphs keep naming the old scratch
  }
  if (relay_scratch_ && relay_scratch_->short_for(p)) {
    wait_for_launches(order_, layout_.placement.ordinals);
    relay_scratch_->grow_for(p, /*keep_old=*/device_epochs_);
  }
  if (spec.low_latency) memory_->ready_low_latency(protocols_.low_latency());
  if (spec.ll128) memory_->ready_ll128(protocols_.ll128());
  if (spec.direct) memory_->ready_direct(protocols_.direct(), peer_words_);
  if (spec.large && !spec.program && offload_->may_stage(spec.collective, spec.root))
    if (Status s = offload_->ready_staging(spec.collective, spec.root); !s.ok()) throw Error(s.message());
  // Across processes the copy engines are ProcessEngines' (broadcasts, made at the join), never this process's pair.
  if (spec.large && !spec.program && setup_.own_engines && protocols_.engine_collective(spec.collective))
    if (Status s = offload_->ready_engines(spec.collective); !s.ok()) throw Error(s.message());
  peers_->ready();
}

Status GpuKernels::get(const CollectiveSpec& given, PreparedCollective** out) {
  const CollectiveSpec spec = cache_->canonical(rules_.as_run(given));
  if ((*out = cache_->find(spec))) return Status();
  const CollectiveSpec one[] = {spec};
  if (Status s = prepare(one); !s.ok()) return s;
  *out = cache_->find(spec);
  return *out ? Status() : Status(StatusCode::internal, spec_text(spec) + ": prepared but not found");
}

Status GpuKernels::mark_broken(const Status& s) {
  broken_ = true;
  broken_why_ = s.message();
  return s;
}

void GpuKernels::abort_launches() {
  if (abort_word_) abort_word_->set();
}

void GpuKernels::drain() { wait_for_launches(order_, layout_.placement.ordinals); }

void GpuKernels::report_profile(int first_own_rank, int own_ranks) const {
  if (profile_.on && profile_.calls() > 0)
    fmt::print(stderr, "canopy: profile of ranks {}..{} of {}: {}\n", first_own_rank, first_own_rank + own_ranks - 1,
               layout_.ranks(), profile_.report());
}

void GpuKernels::stop() {
  watchdog_.reset();
  crew_.reset();
  wait_for_launches(order_, layout_.placement.ordinals);  // across processes the monitor still watches
}

void GpuKernels::drop_offload() { offload_.reset(); }

void GpuKernels::unload() {
  if (cache_) cache_->clear();
  memory_.reset();
  relay_scratch_.reset();
  destroy_device_order(order_);
}

}  // namespace canopy
