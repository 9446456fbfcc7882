// KernelRules (kernel_rules.hpp): the call's kernel, decided from the call and the communicator's settings alone.
#include "runtime/comm/kernel_rules.hpp"

#include <algorithm>
#include <memory>

namespace canopy {

namespace {

// The per-rank size that sets the message class of `call` made with `count` elements (a program's: its larger buffer).
std::uint64_t class_bytes(const CollectiveCall& call, std::uint64_t count, int ranks) {
  return call.program ? size_bytes(*call.program, count, call.dtype)
                      : size_bytes(call.collective, count, call.dtype, ranks);
}

}  // namespace

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
