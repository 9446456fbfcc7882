// ll128_source (see ll128_source.hpp): a Config and per-device rank tables over templates/ll128.cuh.
#include "codegen/ll128_source.hpp"

#include <fmt/format.h>

#include "codegen/one_hop_kernel.hpp"
#include "core/error.hpp"

namespace canopy {

std::int64_t ll128_lines(std::int64_t bytes) { return ((bytes + 7) / 8 + 14) / 15; }

std::int64_t ll128_buffer_bytes(int ranks, std::int64_t max_bytes) {
  return 2 * static_cast<std::int64_t>(ranks) * ll128_lines(max_bytes) * 128;
}

KernelSource ll128_source(const LL128Spec& spec) {
  if (spec.max_bytes < 8 || spec.max_bytes > (std::int64_t{1} << 30))
    throw Error(fmt::format("LL128 kernels: a {}-byte limit; use 8 B to 1 GiB", spec.max_bytes));
  const OneHopSpec& s = spec.base;
  KernelSource k = one_hop_kernel(s, 1024, "canopy_ll128", "LL128 kernels");
  const std::int64_t lines = ll128_lines(spec.max_bytes);
  write_one_hop_source(
      s,
      {"LL128", "ll128.cuh", "kLL", "canopy::run_ll128",
       fmt::format("slots of up to {} ({} lines of 120 data bytes); {} blocks x {} threads per rank",
                   format_byte_size(spec.max_bytes), lines, s.blocks_per_rank, s.threads_per_block),
       fmt::format("  static constexpr unsigned long long kLines = {};  // per slot\n", lines), 1},
      &k);
  return k;
}

}  // namespace canopy
