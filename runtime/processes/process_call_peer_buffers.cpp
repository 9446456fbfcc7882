// A direct-protocol call between two processes on two GPUs on the callers' own buffers (CANOPY_PEER_BUFFERS): the
// single-process direct kernels (templates/direct.cuh), which read the peer's send buffer in place (allgather: store
// into its receive buffer), instead of the inbox kernels, which store into the peer's inbox and then move the inbox
// into the receive buffer, one more pass through the GPU's memory and a handshake per piece. Each eager call the
// processes agree on the host which buffer crosses (the side staged_sides says the other rank touches; on
// ProcessEngines' boards: the owner publishes its allocation, the other maps it, cached by allocation as UserBuffers
// keys it), so a process never trusts a mapping of a freed address. Where a buffer cannot be shared (a buffer across
// several cuMemCreate mappings) or the allreduce is in place, both processes learn it alike and the inbox kernels move
// the call; captured calls never come here (run_in_processes).
#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "runtime/processes/staged_sides.hpp"
#include "runtime/processes/process_call_path.hpp"

namespace canopy {

Status ProcessCallPath::direct_on_peer_buffers(const CollectiveCall& call, const CollectiveSpec& spec, bool* ran) {
  *ran = false;
  if (kernels_.memory().direct().peer_flags.empty())
    return Status(StatusCode::internal, fmt::format("{} count {}: the direct kernels' words for the callers' buffers "
                                                    "were not made",
                                                    call_name(call), call.count));
  const int me = first_own_rank();  // one rank in each of the two processes
  const int other = 1 - me;
  CollectiveSpec on_peers = spec;
  on_peers.own_buffers = false;
  on_peers.peer_buffers = true;
  // The side of each rank's buffers the other rank touches (staged_sides: a broadcast root's input, a reduce's
  // non-root's, every input of allreduce and reduce-scatter, every output of allgather, which pushes): this process
  // publishes its side, if the other touches one, and maps the other's, if it touches one.
  const StagedSides mine = staged_sides(on_peers, me, true);
  const StagedSides theirs = staged_sides(on_peers, other, true);
  const bool publishes = mine.send || mine.recv;
  const bool maps = theirs.send || theirs.recv;
  void* const dst[] = {mine.send ? const_cast<void*>(whole_.send[me]) : whole_.recv[me]};
  const std::span<void* const> published = publishes ? std::span<void* const>(dst) : std::span<void* const>();
  // Its own side's bytes where it only publishes, else the other's (the bytes it touches there; alike where both do).
  const std::uint64_t bytes = maps ? rank_bytes(call, other, theirs.send) : rank_bytes(call, me, mine.send);
  const auto failed_now = [this] { return failure_.failed(); };
  constexpr std::chrono::minutes kAgreeTimeout(10);
  // One-shot allreduce in place would read the buffer its owner overwrites: the inbox kernels take it.
  const bool in_place = call.collective == Collective::allreduce && whole_.send[me] == whole_.recv[me];
  bool shared = false;
  const Status agreed = publishes && maps
                            ? engines_across_->agree_both(dst[0], bytes, failed_now, kAgreeTimeout, &shared,
                                                          in_place ? "the allreduce is in place" : "")
                            : engines_across_->agree(maps, published, bytes, failed_now, kAgreeTimeout, &shared);
  if (!agreed.ok())
    return kernels_.mark_broken(
        Status(agreed.code(), fmt::format("{} count {} on the callers' buffers across processes "
                                          "(CANOPY_PEER_BUFFERS=0 moves it through the inboxes): {}",
                                          call_name(call), call.count, agreed.message())));
  if (!shared) {
    if (publishes) told_unshared(call, &peer_unshared_told_, "through the inboxes, not on the callers' buffers");
    return Status();
  }
  if (maps) {
    if (engines_across_->mapped().size() != 1)
      return Status(StatusCode::internal, fmt::format("{} count {}: the other process published {} buffers, not 1",
                                                      call_name(call), call.count, engines_across_->mapped().size()));
    if (theirs.send)
      whole_.send[other] = engines_across_->mapped()[0];
    else
      whole_.recv[other] = engines_across_->mapped()[0];
  }
  // The inbox area this call's size needs, grown as the inbox kernels would have: a capture of this size (the inbox
  // kernels, which a capture cannot grow it for) may follow this eager call.
  if (Status s = ready_inboxes(call, false); !s.ok()) return s;
  PreparedCollective* p = kernels_.cache().repeat(on_peers);
  if (!p) {
    if (Status s = kernels_.get(on_peers, &p); !s.ok()) return s;
    kernels_.cache().remember(on_peers, p);
  }
  kernels_.profile().mark(CallProfile::choose);
  CollectiveCall on_buffers = call;
  on_buffers.send = whole_.send;
  on_buffers.recv = whole_.recv;
  *ran = true;
  if (layout_.log.enabled(LogLevel::debug, LogSubsys::run))
    layout_.log.debug(LogSubsys::run, fmt::format("{} count {}: the direct kernels on both processes' own buffers",
                                                  call_name(call), call.count));
  return kernels_.launch(*p, on_peers, on_buffers, false, 0, inbox_);
}

}  // namespace canopy
