// Parsing, printing and checking CodegenOptions.
#include "codegen/codegen_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <charconv>
#include <iterator>

#include "core/error.hpp"

namespace canopy {

std::string to_string(const CodegenOptions& o) {
  std::string text = fmt::format("dtype={} op={} chunk={} depth={} blocks={} threads={} devices={}",
                                 to_string(o.dtype), to_string(o.op), o.chunk_bytes, o.fifo_depth, o.blocks_per_rank,
                                 o.threads_per_block, fmt::join(o.device_of_rank, ","));
  if (o.min_blocks_per_sm > 0) text += fmt::format(" min_blocks_per_sm={}", o.min_blocks_per_sm);
  if (o.pull != PullEdges::none) text += " pull=" + to_string(o.pull);
  if (o.own_buffers_only) text += " own_buffers_only";
  if (!o.relay_gpus.empty()) text += fmt::format(" relays={}", fmt::join(o.relay_gpus, ","));
  if (!o.device_of_relay.empty()) text += fmt::format(" relay_devices={}", fmt::join(o.device_of_relay, ","));
  return text;
}

namespace {
constexpr const char* kPullNames[] = {"none", "in", "out", "all", "auto"};
}

std::string to_string(PullEdges pull) { return kPullNames[static_cast<int>(pull)]; }

void set_pull(CodegenOptions& o, std::string_view name, std::string_view what) {
  for (int i = 0; i < 5; ++i)
    if (name == kPullNames[i]) {
      o.pull = static_cast<PullEdges>(i);
      return;
    }
  throw Error(fmt::format("{} '{}': expected auto (the default), none, in (reduce-like trees read their leaves' "
                          "inputs), out (broadcast-like trees read the root's input) or all",
                          what, name));
}

PullEdges resolve_pull(PullEdges pull, bool one_way_reduce) {
  if (pull != PullEdges::automatic) return pull;
  return one_way_reduce ? PullEdges::in : PullEdges::none;
}

void check_codegen_options(const CodegenOptions& o, int ranks) {
  if (o.chunk_bytes < 1024 || o.chunk_bytes % 16 != 0 || o.chunk_bytes > (1LL << 30))
    throw Error(fmt::format("chunk size {} B: use a multiple of 16 bytes between 1 KiB and 1 GiB (e.g. 256KiB)",
                            o.chunk_bytes));
  if (o.chunk_bytes % size_of(o.dtype) != 0)
    throw Error(fmt::format("chunk size {} B is not a multiple of {}'s {} bytes", o.chunk_bytes, to_string(o.dtype),
                            size_of(o.dtype)));
  if (o.fifo_depth < 1 || o.fifo_depth > 64)
    throw Error(fmt::format("FIFO depth {}: use 1 to 64 slots per reduce edge (default 4)", o.fifo_depth));
  if (o.blocks_per_rank < 1 || o.blocks_per_rank > 1024)
    throw Error(fmt::format("blocks per rank {}: use 1 to 1024 (default 24)", o.blocks_per_rank));
  if (o.threads_per_block < 32 || o.threads_per_block > 1024 || o.threads_per_block % 32 != 0)
    throw Error(fmt::format("threads per block {}: use a multiple of 32 from 32 to 1024 (default 512)",
                            o.threads_per_block));
  if (o.min_blocks_per_sm < 0 || o.min_blocks_per_sm > 32)
    throw Error(fmt::format("minimum blocks per SM {}: use 0 (no register cap) to 32", o.min_blocks_per_sm));
  if (!o.device_of_rank.empty()) {
    if (static_cast<int>(o.device_of_rank.size()) != ranks)
      throw Error(fmt::format("rank placement lists {} devices for {} ranks: give one device per rank",
                              o.device_of_rank.size(), ranks));
    for (int d : o.device_of_rank)
      if (d < 0) throw Error(fmt::format("rank placement: device {} is negative", d));
  }
  if (!o.device_of_relay.empty()) {
    if (o.device_of_relay.size() != o.relay_gpus.size())
      throw Error(fmt::format("relay placement lists {} devices for {} relay GPUs: give one device per relay GPU",
                              o.device_of_relay.size(), o.relay_gpus.size()));
    for (int d : o.device_of_relay)
      if (d < 0) throw Error(fmt::format("relay placement: device {} is negative", d));
  }
}

std::vector<int> block_placement(int ranks, int devices) {
  if (devices < 1) throw Error(fmt::format("{} devices: need at least one GPU to place ranks on", devices));
  // Blocks of ranks / devices, one more on each of the first ranks % devices devices. Blocks of the rounded-up size
  // throughout would leave the last devices empty (6 ranks on 4 GPUs: 2, 2, 2, 0) while the launches count them.
  const int base = ranks / devices, longer = ranks % devices;
  std::vector<int> out;
  out.reserve(ranks);
  for (int d = 0; d < devices; ++d)
    for (int i = 0; i < base + (d < longer ? 1 : 0); ++i) out.push_back(d);
  return out;
}

}  // namespace canopy
