// KernelRules: which kernel a call runs, as pure functions of the call and of what the communicator decided once (its
// configuration, protocol table, tuned chunks, rank count, and whether its kernels run on their own rank's buffers):
// an avg as its sum, the protocol chosen once per call, the message class of its size, the spec of its kernel. Every
// way of running asks them alike (comm/call_path.hpp); no CUDA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/call/collective_call.hpp"
#include "runtime/comm/collective_spec.hpp"
#include "runtime/comm/communicator_config.hpp"
#include "runtime/comm/machine_tuning.hpp"
#include "runtime/protocol/protocol_table.hpp"

namespace canopy {

// The one-line rules are defined here, inline: every call asks them, and an out-of-line call costs more than their
// bodies (the library is built -fPIC, where a call to one of its exported functions is never inlined).

// avg of a collective that reduces (not a program) runs as a sum, each result divided after: its kernel is the sum's.
inline bool runs_as_sum(const CollectiveCall& call) {
  return call.op == ReduceOp::avg && reduces(call.collective) && !call.program;
}
// The call the kernels run: `call`, an avg as its sum.
inline CollectiveCall kernels_call(CollectiveCall call) {
  if (runs_as_sum(call)) call.op = ReduceOp::sum;
  return call;
}
// Whether some rank's receive buffer is its send buffer (check_call refuses any other overlap).
inline bool is_in_place(const CollectiveCall& call) {
  for (std::size_t r = 0; r < call.send.size() && r < call.recv.size(); ++r)
    if (call.send[r] == call.recv[r]) return true;
  return false;
}
// `spec` with the kernel `pick` chose: a plan-free protocol (and whether two-shot), or the planned trees.
inline CollectiveSpec with_protocol(CollectiveSpec spec, const ProtocolPick& pick) {
  spec.low_latency = pick.protocol == Protocol::low_latency;
  spec.ll128 = pick.protocol == Protocol::ll128;
  spec.direct = pick.protocol == Protocol::direct;
  spec.two_shot = pick.two_shot;
  return spec;
}
// Large from config.large_bytes; of those, huge from config.huge_bytes where set.
inline bool large_at(const CommunicatorConfig& config, std::uint64_t bytes) {
  return bytes >= static_cast<std::uint64_t>(config.large_bytes);
}
inline bool huge_at(const CommunicatorConfig& config, std::uint64_t bytes) {
  return config.huge_bytes > 0 && large_at(config, bytes) && bytes >= static_cast<std::uint64_t>(config.huge_bytes);
}

struct KernelRules {
  const CommunicatorConfig* config = nullptr;
  const ProtocolTable* protocols = nullptr;
  const MachineTuning* tuning = nullptr;
  int ranks = 0;
  // Across processes under CANOPY_OWN_BUFFERS: the planned trees and the direct protocol run in their forms that touch
  // only their own rank's buffers (the direct one one-shot), but a spec of the direct kernels on the callers' buffers.
  bool own_buffers = false;

  // What a call of `count` elements (its count, or the kernels' share of it) takes: the protocol table's choice, once
  // per call; a program's call takes its own kernel.
  ProtocolPick pick(const CollectiveCall& call, std::uint64_t count, bool in_place_call) const {
    if (call.program) return ProtocolPick{};
    return protocols->choose(call.collective, size_bytes(call.collective, count, call.dtype, ranks), in_place_call);
  }
  // `spec` as this communicator runs it (own_buffers above); else unchanged.
  CollectiveSpec as_run(CollectiveSpec spec) const {
    if (own_buffers && !spec.program && !spec.low_latency && !spec.ll128 && !spec.peer_buffers) spec.own_buffers = true;
    return spec;
  }
  // The chunk tuning.json holds for a call of this size (0: none, or the chunk is fixed).
  std::int64_t tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const;
  // The kernel `call` runs, for the protocol `pick` chose (its count the kernels' share). The message class (large,
  // huge) follows the call as made, `whole_count` elements (0: call.count): the share a hybrid transfer leaves the
  // kernels is a little smaller, and a call of CANOPY_HUGE_BYTES must still be huge. A program's spec names the
  // caller's program, not yet the cache's canonical copy.
  CollectiveSpec kernel_spec(const CollectiveCall& call, const ProtocolPick& pick, std::uint64_t whole_count = 0) const;
};

}  // namespace canopy
