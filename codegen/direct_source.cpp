// direct_source (see direct_source.hpp): a Config and per-device rank tables over templates/direct.cuh.
#include "codegen/direct_source.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/one_hop_kernel.hpp"
#include "core/data_type.hpp"
#include "core/error.hpp"

namespace canopy {

int direct_flag_count(int ranks, int blocks_per_rank) { return 2 * ranks * blocks_per_rank; }

bool direct_has_two_shot(Collective collective) {
  return collective == Collective::allreduce || collective == Collective::broadcast || collective == Collective::reduce;
}

bool direct_reads(Collective collective, int root, int me, int peer, bool two_shot) {
  if (me == peer) return false;
  if (two_shot) return true;
  if (collective == Collective::broadcast) return peer == root;
  if (collective == Collective::reduce) return me == root;
  return true;
}

int direct_entered_index(int, int blocks_per_rank, int peer, int block) { return peer * blocks_per_rank + block; }
int direct_done_index(int ranks, int blocks_per_rank, int peer, int block) {
  return (ranks + peer) * blocks_per_rank + block;
}

std::uint64_t direct_moved_bytes(Collective collective, std::uint64_t bytes, int ranks, bool two_shot) {
  const std::uint64_t others = ranks > 1 ? static_cast<std::uint64_t>(ranks - 1) : 0;
  if (two_shot && direct_has_two_shot(collective))
    return 2 * others * (bytes / static_cast<std::uint64_t>(std::max(ranks, 1)));
  switch (collective) {
    case Collective::broadcast:
    case Collective::reduce:
    case Collective::allreduce:
      return others * bytes;
    case Collective::allgather:
    case Collective::reducescatter:
      return others * (bytes / static_cast<std::uint64_t>(std::max(ranks, 1)));
  }
  return bytes;
}

std::uint64_t direct_inbox_bytes(std::uint64_t count, int element_bytes, int ranks) {
  const std::uint64_t per_vector = 16 / static_cast<std::uint64_t>(element_bytes);
  return static_cast<std::uint64_t>(ranks) * ((count + per_vector - 1) / per_vector * per_vector) *
         static_cast<std::uint64_t>(element_bytes);
}

KernelSource direct_source(const DirectSpec& spec) {
  const OneHopSpec& s = spec.base;
  if (spec.two_shot && !direct_has_two_shot(s.collective))
    throw Error(fmt::format(
        "direct kernels: two-shot is a variant of allreduce, broadcast and reduce, not of {}; unset two_shot",
        to_string(s.collective)));
  if (spec.piece_bytes != 0 && !spec.inbox)
    throw Error(fmt::format("direct kernels: piece_bytes {} is for the inbox kernels; set inbox or use 0",
                            spec.piece_bytes));
  if (spec.piece_bytes != 0 && spec.two_shot)
    throw Error(fmt::format("direct kernels: piece_bytes {} is for the one-shot inbox kernels (two-shot ones move "
                            "whole parts); unset two_shot or use 0",
                            spec.piece_bytes));
  if (spec.piece_bytes < 0 || spec.piece_bytes % 16 != 0)
    throw Error(fmt::format("direct kernels: piece_bytes {}: use 0 (whole parts) or a positive multiple of 16 bytes",
                            spec.piece_bytes));
  std::string prefix = spec.inbox ? (spec.two_shot ? "canopy_directinbox2shot" : "canopy_directinbox")
                       : spec.two_shot ? "canopy_direct2shot"
                                       : "canopy_direct";
  if (spec.piece_bytes > 0) prefix += fmt::format("_piece{}", spec.piece_bytes);
  const char* how = spec.inbox && spec.two_shot
                        ? "two-shot through the inboxes: every rank stores share q of its input into rank q's inbox, "
                          "combines its own share and stores it into the inboxes that need it"
                    : spec.inbox ? "every rank stores what its peers need into their inboxes and moves its own inbox "
                                   "into its receive buffer"
                    : spec.two_shot ? "two-shot: every rank moves its share of the elements from the send buffers to "
                                      "the receive buffers"
                                    : "every rank reads the send buffers it needs from the other ranks";
  KernelSource k = one_hop_kernel(s, 1024, prefix.c_str(), "direct kernels");
  std::string config = fmt::format("  static constexpr bool kTwoShot = {};\n", spec.two_shot);
  if (spec.inbox)  // in elements, whole 16-byte vectors (0: whole parts)
    config += fmt::format("  static constexpr unsigned long long kPiece = {};\n", spec.piece_bytes / size_of(s.dtype));
  write_one_hop_source(s,
                       {spec.inbox ? "direct (inbox)" : "direct",
                        spec.inbox ? (spec.two_shot ? "direct_inbox_two_shot.cuh" : "direct_inbox.cuh") : "direct.cuh",
                        "kDirect",
                        spec.inbox ? (spec.two_shot ? "canopy::run_direct_inbox_two_shot" : "canopy::run_direct_inbox")
                                   : "canopy::run_direct",
                        spec.piece_bytes > 0
                            ? fmt::format("{}, in pieces of {} bytes; {} blocks x {} threads per rank", how,
                                          spec.piece_bytes, s.blocks_per_rank, s.threads_per_block)
                            : fmt::format("{}; {} blocks x {} threads per rank", how, s.blocks_per_rank,
                                          s.threads_per_block),
                        config, spec.two_shot ? 1 : 0},
                       &k);
  return k;
}

}  // namespace canopy
