// Building the protocol table (limits per collective, shapes fitted to the GPUs) and choosing a call's protocol.
#include "runtime/protocol/protocol_table.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "codegen/direct_source.hpp"
#include "codegen/ll128_source.hpp"
#include "codegen/low_latency_source.hpp"
#include "core/byte_size.hpp"

namespace canopy {

namespace {

// Fits `blocks_per_rank` (a plan-free protocol's, named `what`) to one block per SM for each rank a GPU runs, so
// every block of a launch is resident.
void fit_blocks(const ProtocolFacts& facts, const Logger& log, const char* what, int* blocks_per_rank) {
  const int per_gpu = (facts.ranks + facts.devices - 1) / facts.devices;
  if (*blocks_per_rank * per_gpu > facts.min_sms) {
    const int fit = std::max(1, facts.min_sms / per_gpu);
    log.info(LogSubsys::init, fmt::format("{} kernels: {} blocks per rank instead of {}, so the {} ranks of a GPU fit "
                                          "its {} SMs at one block each",
                                          what, fit, *blocks_per_rank, per_gpu, facts.min_sms));
    *blocks_per_rank = fit;
  }
}

// A line protocol's buffers (low-latency, LL128) for the sizes its `limits` give it (shape->max_bytes, the largest):
// left off, its limits zeroed, when its buffers (`buffer_bytes` per rank) would take more than
// kMaxLineBufferBytesPerGpu on a GPU (they grow with the square of the ranks a GPU runs: each rank holds a slot per
// rank), or when `unusable` gives a reason; else its blocks are fitted to the GPUs.
void set_up_line_protocol(const ProtocolFacts& facts, const Logger& log, const char* name, const char* variable,
                          std::int64_t (*buffer_bytes)(int, std::int64_t), const std::string& unusable,
                          OneLaunchShape* shape, std::array<std::int64_t, kCollectives>* limits) {
  if (shape->max_bytes == 0) return;
  const int n = facts.ranks, devices = facts.devices;
  const std::int64_t per_gpu = buffer_bytes(n, shape->max_bytes) * ((n + devices - 1) / devices);
  const std::string why = per_gpu > kMaxLineBufferBytesPerGpu
                              ? fmt::format("its buffers would take {} per GPU for {} ranks (lower {} to use it)",
                                            format_byte_size(per_gpu), n, variable)
                              : unusable;
  if (!why.empty()) {
    log.info(LogSubsys::init, fmt::format("{} protocol off: {}", name, why));
    shape->max_bytes = 0;
    limits->fill(0);
    return;
  }
  fit_blocks(facts, log, name, &shape->blocks_per_rank);
}

}  // namespace

void use_inbox_limits(ProtocolSettings* settings, int ranks) {
  std::array<std::int64_t, kCollectives> limits{};
  for (std::size_t c = 0; c < kCollectives; ++c)
    limits[c] = direct_own_buffers_default_bytes(static_cast<Collective>(c), ranks);
  settings->direct_moved_limits = limits;
  settings->direct.max_bytes = std::max(settings->direct.max_bytes, *std::max_element(limits.begin(), limits.end()));
}

// Per collective, the protocol limits: tuned (those `canopy tune --protocols` chose for this machine) where it chose
// some, else the shapes' (the options' or environment's, else the defaults; LL128's default is per collective unless
// given). LL128 takes only sizes above LL's limit, so where its limit is within LL's it takes none. The shapes'
// max_bytes become the largest limit of any collective: what the line protocols' buffers must hold.
ProtocolTable make_protocol_table(const ProtocolSettings& settings, const ProtocolFacts& facts,
                                  const std::function<std::optional<ProtocolLimits>(Collective)>& tuned,
                                  const Logger& log) {
  ProtocolTable t;
  t.ranks_ = facts.ranks;
  t.devices_ = facts.devices;
  t.direct_inbox_ = settings.direct_inbox;
  t.low_latency_ = settings.low_latency;
  t.ll128_ = settings.ll128;
  t.direct_ = settings.direct;
  t.ll_two_shot_bytes_ = settings.ll_two_shot_bytes;
  t.direct_two_shot_bytes_ = settings.direct_two_shot_bytes;
  t.engine_ = settings.engine;
  std::vector<std::string> chosen;
  for (std::size_t c = 0; c < kCollectives; ++c) {
    const Collective collective = static_cast<Collective>(c);
    std::optional<ProtocolLimits> e;
    if (settings.use_tuned && tuned) e = tuned(collective);
    t.ll_limit_[c] = e ? e->ll_bytes : t.low_latency_.max_bytes;
    const std::int64_t ll128_default =
        ll128_default_bytes(collective, facts.ranks, facts.devices, settings.inbox_on_own_gpus);
    t.ll128_limit_[c] = e ? e->ll128_bytes : settings.ll128_given ? t.ll128_.max_bytes : ll128_default;
    if (t.ll128_limit_[c] <= t.ll_limit_[c]) t.ll128_limit_[c] = 0;
    t.direct_limit_[c] = e ? std::optional(e->direct_bytes) : std::nullopt;
    if (e) chosen.push_back(fmt::format("{}: {}", to_string(collective), describe(*e)));
  }
  if (!chosen.empty())
    log.info(LogSubsys::init, fmt::format("protocol limits tuned for this machine ({}): {}", settings.tuned_from,
                                          fmt::join(chosen, "; ")));
  const std::int64_t ll128_asked = t.ll128_.max_bytes;
  t.low_latency_.max_bytes = *std::max_element(t.ll_limit_.begin(), t.ll_limit_.end());
  t.ll128_.max_bytes = *std::max_element(t.ll128_limit_.begin(), t.ll128_limit_.end());
  if (chosen.empty() && ll128_asked > 0 && t.ll128_.max_bytes == 0)
    log.info(LogSubsys::init, fmt::format("LL128 protocol off: its limit {} is within the one below it ({})",
                                          format_byte_size(ll128_asked), format_byte_size(t.low_latency_.max_bytes)));
  // One hop from every rank to every other: every pair of GPUs needs peer access.
  set_up_line_protocol(facts, log, "low-latency", "CANOPY_LL_BYTES", low_latency_buffer_bytes, facts.no_peer_access,
                       &t.low_latency_, &t.ll_limit_);
  if (t.low_latency_.max_bytes > 0 && t.ll_two_shot_bytes_ > 0 && t.ll_two_shot_bytes_ <= t.low_latency_.max_bytes)
    log.info(LogSubsys::init,
             fmt::format("low-latency allreduces from {} run two-shot", format_byte_size(t.ll_two_shot_bytes_)));
  // A warp's 128-byte stores arrive whole only over NVLink: every pair of GPUs one NVLink hop apart.
  set_up_line_protocol(facts, log, "LL128", "CANOPY_LL128_BYTES", ll128_buffer_bytes, facts.no_nvlink_hop, &t.ll128_,
                       &t.ll128_limit_);
  // Every rank reads the others' buffers in one hop: a PCIe hop would carry mid-size messages slower than the trees.
  if (t.direct_.max_bytes > 0) {
    if (!facts.no_nvlink_hop.empty()) {
      log.info(LogSubsys::init, "direct protocol off: " + facts.no_nvlink_hop);
      t.direct_.max_bytes = 0;
    } else {
      fit_blocks(facts, log, "direct", &t.direct_.blocks_per_rank);
    }
  }
  t.inbox_piece_bytes_ = settings.inbox_piece_bytes;
  const auto& moved = settings.direct_moved_limits;
  for (std::size_t c = 0; c < kCollectives; ++c)
    t.direct_moved_[c] = moved ? std::min((*moved)[c], t.direct_.max_bytes) : t.direct_.max_bytes;
  if (moved && t.direct_.max_bytes > 0) {
    std::vector<std::string> limits;
    for (std::size_t c = 0; c < kCollectives; ++c)
      limits.push_back(
          fmt::format("{} {}", to_string(static_cast<Collective>(c)), format_byte_size(t.direct_moved_[c])));
    log.info(LogSubsys::init, fmt::format("direct protocol on own buffers across GPUs, up to what a link carries: {} "
                                          "(the planned trees beyond; CANOPY_DIRECT_BYTES sets one limit for all)",
                                          fmt::join(limits, ", ")));
  }
  // The copy engines move data between two ranks on two GPUs joined by NVLink.
  if (t.engine_.min_bytes.value_or(1) > 0) {
    const std::string why = facts.ranks != 2 || facts.devices != 2
                                ? fmt::format("{} ranks on {} GPUs (they move data between two ranks on two GPUs)",
                                              facts.ranks, facts.devices)
                                : facts.no_nvlink_hop;
    if (!why.empty()) {
      log.info(LogSubsys::init, "copy engines off: " + why);
      t.engine_.min_bytes = 0;
    }
  }
  return t;
}

bool ProtocolTable::direct_two_shot(Collective collective, std::uint64_t bytes, bool in_place) const {
  if (!direct_has_two_shot(collective)) return false;
  if (in_place && collective == Collective::allreduce && !direct_inbox_) return true;
  const std::int64_t from = direct_two_shot_bytes_.value_or(
      direct_inbox_ ? direct_inbox_two_shot_default_bytes(collective, ranks_)
                    : direct_two_shot_default_bytes(collective, ranks_, devices_));
  return from > 0 && bytes >= static_cast<std::uint64_t>(from);
}

bool ProtocolTable::engine_collective(Collective collective) const {
  return engine_.min_bytes_for(collective) > 0 && (collective == Collective::broadcast ||
                                                    collective == Collective::reduce ||
                                                    collective == Collective::allreduce);
}

bool ProtocolTable::engine_sized(Collective collective, std::uint64_t bytes) const {
  return engine_collective(collective) && bytes >= static_cast<std::uint64_t>(engine_.min_bytes_for(collective));
}

// The order: low-latency (the size S bounds every slot: the LL kernels move each rank's data in one hop at a few tens
// of GB/s, so what decides is the bytes a rank handles), then LL128 (likewise; one rank moves nothing to others, and
// the trees copy it locally), then direct (on the bytes its busiest link carries, or a tuned limit on S), then the
// planned trees or copy engines. One rank's call is a local copy, which the trees' kernel does with more blocks.
ProtocolPick ProtocolTable::choose(Collective collective, std::uint64_t bytes, bool in_place) const {
  const auto c = static_cast<std::size_t>(collective);
  ProtocolPick pick;
  pick.copy_engine = engine_sized(collective, bytes);
  if (ll_limit_[c] > 0 && bytes <= static_cast<std::uint64_t>(ll_limit_[c])) {
    pick.protocol = Protocol::low_latency;
    pick.two_shot = ranks_ >= 2 && collective == Collective::allreduce && ll_two_shot_bytes_ > 0 &&
                    bytes >= static_cast<std::uint64_t>(ll_two_shot_bytes_);
    return pick;
  }
  if (ll128_limit_[c] > 0 && ranks_ > 1 && bytes <= static_cast<std::uint64_t>(ll128_limit_[c])) {
    pick.protocol = Protocol::ll128;
    return pick;
  }
  const bool two_shot = direct_two_shot(collective, bytes, in_place);
  const bool within = direct_limit_[c] ? bytes <= static_cast<std::uint64_t>(*direct_limit_[c])
                                       : direct_moved_bytes(collective, bytes, ranks_, two_shot) <=
                                             static_cast<std::uint64_t>(direct_moved_[c]);
  if (direct_.max_bytes > 0 && ranks_ > 1 && within && !pick.copy_engine) {
    pick.protocol = Protocol::direct;
    pick.two_shot = ranks_ >= 2 && two_shot;
  }
  return pick;
}

}  // namespace canopy
