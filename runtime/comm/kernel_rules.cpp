// KernelRules (kernel_rules.hpp): the call's kernel, decided from the call and the communicator's settings alone.
#include "runtime/comm/kernel_rules.hpp"

#include <algorithm>
#include <memory>

namespace canopy {

bool runs_as_sum(const CollectiveCall& call) {
  return call.op == ReduceOp::avg && reduces(call.collective) && !call.program;
}

CollectiveCall kernels_call(CollectiveCall call) {
  if (runs_as_sum(call)) call.op = ReduceOp::sum;
  return call;
}

bool is_in_place(const CollectiveCall& call) {
  for (std::size_t r = 0; r < call.send.size() && r < call.recv.size(); ++r)
    if (call.send[r] == call.recv[r]) return true;
  return false;
}

CollectiveSpec with_protocol(CollectiveSpec spec, const ProtocolPick& pick) {
  spec.low_latency = pick.protocol == Protocol::low_latency;
  spec.ll128 = pick.protocol == Protocol::ll128;
  spec.direct = pick.protocol == Protocol::direct;
  spec.two_shot = pick.two_shot;
  return spec;
}

bool large_at(const CommunicatorConfig& config, std::uint64_t bytes) {
  return bytes >= static_cast<std::uint64_t>(config.large_bytes);
}

bool huge_at(const CommunicatorConfig& config, std::uint64_t bytes) {
  return config.huge_bytes > 0 && large_at(config, bytes) && bytes >= static_cast<std::uint64_t>(config.huge_bytes);
}

namespace {

// The per-rank size that sets the message class of `call` made with `count` elements (a program's: its larger buffer).
std::uint64_t class_bytes(const CollectiveCall& call, std::uint64_t count, int ranks) {
  return call.program ? size_bytes(*call.program, count, call.dtype)
                      : size_bytes(call.collective, count, call.dtype, ranks);
}

}  // namespace

ProtocolPick KernelRules::pick(const CollectiveCall& call, std::uint64_t count, bool in_place_call) const {
  if (call.program) return ProtocolPick{};
  return protocols->choose(call.collective, size_bytes(call.collective, count, call.dtype, ranks), in_place_call);
}

CollectiveSpec KernelRules::as_run(CollectiveSpec spec) const {
  if (own_buffers && !spec.program && !spec.low_latency && !spec.ll128 && !spec.peer_buffers) spec.own_buffers = true;
  return spec;
}

std::int64_t KernelRules::tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const {
  return tuning->chunk(config->chunk_fixed, collective, count, dtype, ranks);
}

CollectiveSpec KernelRules::kernel_spec(const CollectiveCall& call, const ProtocolPick& pick,
                                        std::uint64_t whole_count) const {
  const std::uint64_t bytes = class_bytes(call, std::max(whole_count, call.count), ranks);
  CollectiveSpec spec{call.collective, call.dtype, call.op, call.root, large_at(*config, bytes)};
  spec.huge = huge_at(*config, bytes);
  if (call.program) {
    // Not owned: canonical() copies it the first time, and only compares it with that copy afterwards.
    spec.program = std::shared_ptr<const algo::Program>(std::shared_ptr<const algo::Program>(), call.program);
    return spec;
  }
  if (call.count > 0) spec = with_protocol(spec, pick);
  spec = as_run(spec);
  if (!plan_free(spec))
    spec.chunk_bytes = call.chunk_bytes > 0 ? call.chunk_bytes : tuned_chunk(call.collective, call.count, call.dtype);
  return spec;
}

}  // namespace canopy
