// resolve_config: options, else environment, else defaults, for each setting, then the checks.
#include "runtime/comm/communicator_config.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <utility>

#include "core/byte_size.hpp"
#include "core/error.hpp"

namespace canopy {

namespace {

CodegenOptions kernel_shape(const CommunicatorOptions& options) {
  CodegenOptions shape = shape_from_environment();
  if (options.chunk_bytes) shape.chunk_bytes = *options.chunk_bytes;
  if (options.blocks_per_rank) shape.blocks_per_rank = *options.blocks_per_rank;
  if (options.threads_per_block) shape.threads_per_block = *options.threads_per_block;
  if (options.fifo_depth) shape.fifo_depth = *options.fifo_depth;
  return shape;
}

// Protocol limits: options, else the environment, else tuned for this machine (when neither gives one), else the
// defaults.
ProtocolSettings protocol_settings(const CommunicatorOptions& options, int ranks) {
  ProtocolSettings p;
  p.low_latency = low_latency_shape_from_environment();
  p.ll128 = ll128_shape_from_environment();
  p.direct = direct_shape_from_environment();
  if (options.low_latency_bytes) p.low_latency.max_bytes = *options.low_latency_bytes;
  if (options.ll128_bytes) p.ll128.max_bytes = *options.ll128_bytes;
  if (options.direct_bytes) p.direct.max_bytes = *options.direct_bytes;
  for (const auto& [name, limit] :
       {std::pair{"low-latency", p.low_latency.max_bytes}, std::pair{"LL128", p.ll128.max_bytes},
        std::pair{"direct-protocol", p.direct.max_bytes}})
    if (limit < 0) throw Error(fmt::format("{} limit {} bytes: use 0 (off) or a positive size", name, limit));
  const bool limits_given = options.low_latency_bytes || options.ll128_bytes || options.direct_bytes ||
                            std::getenv("CANOPY_LL_BYTES") || std::getenv("CANOPY_LL128_BYTES") ||
                            std::getenv("CANOPY_DIRECT_BYTES");
  p.use_tuned = options.tuned_protocols.value_or(true) && !limits_given;
  p.ll128_given = options.ll128_bytes || std::getenv("CANOPY_LL128_BYTES");
  p.direct_given = options.direct_bytes || std::getenv("CANOPY_DIRECT_BYTES");
  p.direct_blocks_given = std::getenv("CANOPY_DIRECT_BLOCKS") != nullptr;
  p.ll_two_shot_bytes =
      options.ll_two_shot_bytes.value_or(ll_two_shot_bytes_from_environment().value_or(ll_two_shot_default_bytes(ranks)));
  if (p.ll_two_shot_bytes < 0)
    throw Error(
        fmt::format("low-latency two-shot limit {} bytes: use 0 (never) or a positive size", p.ll_two_shot_bytes));
  p.direct_two_shot_bytes =
      options.direct_two_shot_bytes ? options.direct_two_shot_bytes : direct_two_shot_bytes_from_environment();
  if (p.direct_two_shot_bytes.value_or(0) < 0)
    throw Error(
        fmt::format("direct two-shot limit {} bytes: use 0 (never) or a positive size", *p.direct_two_shot_bytes));
  p.engine = engine_shape_from_environment();
  if (options.engine_bytes) p.engine.min_bytes = *options.engine_bytes;
  if (p.engine.min_bytes && *p.engine.min_bytes < 0)
    throw Error(fmt::format("copy-engine limit {} bytes: use 0 (off) or a positive size", *p.engine.min_bytes));
  return p;
}

}  // namespace

CommunicatorConfig resolve_config(const CommunicatorOptions& options, int ranks) {
  CommunicatorConfig c;
  c.shape = kernel_shape(options);
  const LargeMessageShape large = large_shape_from_environment(c.shape.blocks_per_rank);
  c.large_blocks = options.large_blocks_per_rank.value_or(large.blocks_per_rank);
  c.large_bytes = options.large_bytes.value_or(large.min_bytes);
  if (options.blocks_per_rank && !options.large_blocks_per_rank) c.large_blocks = *options.blocks_per_rank;
  c.huge_blocks = options.huge_blocks_per_rank.value_or(large.huge_blocks_per_rank);
  c.huge_bytes = options.huge_bytes.value_or(large.huge_min_bytes);
  if (options.blocks_per_rank && !options.huge_blocks_per_rank) c.huge_blocks = *options.blocks_per_rank;
  // The default huge class gives way: to a block count chosen for the large calls (it then holds for all of them,
  // as before the class existed) and to a large-message size at or above its own.
  const bool huge_given = large.huge_given || options.huge_bytes || options.huge_blocks_per_rank;
  const bool large_blocks_given = large.blocks_given || options.large_blocks_per_rank || options.blocks_per_rank;
  if (!huge_given && (large_blocks_given || c.huge_bytes <= c.large_bytes)) c.huge_bytes = 0;
  if (c.huge_bytes < 0)
    throw Error(fmt::format("huge-message size {} bytes (CANOPY_HUGE_BYTES): use 0 (none) or a positive size",
                            c.huge_bytes));
  if (c.huge_bytes > 0 && c.huge_bytes <= c.large_bytes)
    throw Error(fmt::format("huge-message size {} is not above the large-message size {} (CANOPY_HUGE_BYTES, "
                            "CANOPY_LARGE_BYTES): huge calls are the largest of the large ones; give a size above "
                            "{} or 0 (none)",
                            format_byte_size(c.huge_bytes), format_byte_size(c.large_bytes),
                            format_byte_size(c.large_bytes)));
  check_codegen_options(c.shape, ranks);
  for (const auto& [blocks, setting] : {std::pair{c.large_blocks, "large-message blocks (CANOPY_LARGE_BLOCKS)"},
                                         std::pair{c.huge_blocks, "huge-message blocks (CANOPY_HUGE_BLOCKS)"}}) {
    CodegenOptions large_check = c.shape;
    large_check.blocks_per_rank = blocks;
    try {
      check_codegen_options(large_check, ranks);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", setting, e.what()));
    }
  }
  c.chunk_fixed = options.chunk_bytes.has_value() || std::getenv("CANOPY_CHUNK") != nullptr;
  c.protocols = protocol_settings(options, ranks);
  c.check_pointers = check_pointers_from_environment();
  c.check_calls = check_calls_from_environment();
  c.stage_only_shared = stage_only_shared_from_environment();
  c.own_buffers = own_buffers_from_environment();
  c.peer_buffers = peer_buffers_from_environment();
  c.inbox_piece_bytes = inbox_piece_bytes_from_environment();
  c.profile_calls = profile_calls_from_environment();
  c.launch = launch_threads_from_environment();
  if (options.launch_threads) c.launch.enabled = *options.launch_threads;
  if (options.launch_spin) c.launch.spin = *options.launch_spin;
  if (c.launch.spin.count() < 1)
    throw Error(fmt::format("launch_spin {} us: use at least 1 us (launch_threads = false turns the helpers off)",
                            c.launch.spin.count()));
  c.hybrid = hybrid_shape_from_environment();
  if (options.hybrid_bytes) {
    c.hybrid.min_bytes = *options.hybrid_bytes;
    c.hybrid.given = true;
  }
  if (options.hybrid_share) c.hybrid.share = *options.hybrid_share;
  if (c.hybrid.min_bytes < 0)
    throw Error(fmt::format("hybrid limit {} bytes: use 0 (off) or a positive size", c.hybrid.min_bytes));
  if (c.hybrid.share && !(*c.hybrid.share >= 0 && *c.hybrid.share <= 0.5))
    throw Error(fmt::format("hybrid share {}: use 0 to 0.5 (unset: from the topology's link rates)", *c.hybrid.share));
  c.watchdog_seconds = watchdog_seconds_from_environment();
  c.stall_seconds = stall_seconds_from_environment();
  c.gpu_sharers = options.gpu_sharers ? *options.gpu_sharers : gpu_sharers_from_environment();
  if (c.gpu_sharers < 0)
    throw Error(fmt::format("gpu_sharers {}: give the processes that share this GPU in all (>= 0; 0: the "
                            "communicator's own)",
                            c.gpu_sharers));
  if (!options.relays.empty()) {
    c.relay_memory = options.relay_memory ? *options.relay_memory : relay_memory_cap_from_environment();
    if (c.relay_memory < (1 << 20))
      throw Error(fmt::format("relay_memory {} bytes: give each relay GPU at least 1 MiB for its rings (unset: "
                              "CANOPY_RELAY_MEMORY, default 64 MiB)",
                              c.relay_memory));
  }
  return c;
}

}  // namespace canopy
