// low_latency_source (see low_latency_source.hpp): a Config and per-device rank tables over
// templates/low_latency.cuh.
#include "codegen/low_latency_source.hpp"

#include <fmt/format.h>

#include "codegen/one_hop_kernel.hpp"
#include "core/error.hpp"

namespace canopy {

std::int64_t low_latency_buffer_bytes(int ranks, std::int64_t max_bytes) {
  return 2 * static_cast<std::int64_t>(ranks) * ((max_bytes + 7) / 8) * 16;
}

KernelSource low_latency_source(const LowLatencySpec& spec) {
  if (spec.max_bytes < 8 || spec.max_bytes > (std::int64_t{1} << 30))
    throw Error(fmt::format("low-latency kernels: a {}-byte limit; use 8 B to 1 GiB", spec.max_bytes));
  const OneHopSpec& s = spec.base;
  if (spec.two_shot && s.collective != Collective::allreduce)
    throw Error(fmt::format("low-latency kernels: two-shot is an allreduce variant, not a {}; unset two_shot",
                            to_string(s.collective)));
  KernelSource k = one_hop_kernel(s, 64, spec.two_shot ? "canopy_ll2shot" : "canopy_ll", "low-latency kernels");
  const std::int64_t lines = (spec.max_bytes + 7) / 8;
  write_one_hop_source(
      s,
      {"low-latency", "low_latency.cuh", "kLL", "canopy::run_ll",
       fmt::format("{}slots of up to {} ({} lines of 8 data bytes); {} blocks x {} threads per rank",
                   spec.two_shot ? "two-shot (reduce-scatter, then allgather); " : "", format_byte_size(spec.max_bytes),
                   lines, s.blocks_per_rank, s.threads_per_block),
       fmt::format("  static constexpr unsigned long long kLines = {};  // per slot\n"
                   "  static constexpr bool kTwoShot = {};\n",
                   lines, spec.two_shot)},
      &k);
  return k;
}

}  // namespace canopy
