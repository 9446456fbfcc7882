// How canopy bench prints its comparison with NCCL (rounds_text.hpp).
#include "bench/harness/rounds_text.hpp"

#include <fmt/format.h>

#include "bench/harness/paired_rounds.hpp"

namespace canopy {

std::string nccl_context_line(const std::string& version, const std::string& path, const char* nvls_enable) {
  const std::string nvls = !nvls_enable ? "NVLS as NCCL picks it (NCCL_NVLS_ENABLE unset: on where the machine has "
                                          "NVLink SHARP)"
                           : std::string(nvls_enable) == "0"
                               ? "NVLS off (NCCL_NVLS_ENABLE=0)"
                               : fmt::format("NVLS allowed (NCCL_NVLS_ENABLE={})", nvls_enable);
  return fmt::format("# NCCL {} ({}), {}\n", version, path, nvls);
}

std::string rounds_header(int rounds, double target) {
  if (rounds <= 1)
    return "# one round a size, Canopy timed before NCCL: ratio = NCCL's time / Canopy's (above 1: Canopy is faster); "
           "--rounds 5 or more for medians, spreads and verdicts\n";
  return fmt::format(
      "# {} rounds a size, each timing both libraries, the first alternating by round and by size; times are the "
      "rounds' medians\n"
      "# ratio = NCCL's median time / Canopy's (above 1: Canopy is faster); range = the least and most the rounds "
      "allow (NCCL's fastest over Canopy's slowest, NCCL's slowest over Canopy's fastest);\n"
      "# vs {:.2f}: met only where the whole range clears {:.2f}, missed where none of it does, overlaps otherwise "
      "(not met)\n",
      rounds, target, target);
}

std::string nccl_column_titles(int rounds, double target) {
  std::string t = fmt::format(" {:>10} {:>10} {:>7}", "nccl(us)", "nccl_bus", "ratio");
  if (rounds > 1) t += fmt::format(" {:>11} {:>8}", "range", fmt::format("vs {:.2f}", target));
  return t;
}

std::string nccl_columns(const BenchRow& r, double target) {
  if (r.nccl_time_us <= 0) {
    std::string t = fmt::format(" {:>10} {:>10} {:>7}", "n/a", "n/a", "n/a");
    if (r.rounds > 1) t += fmt::format(" {:>11} {:>8}", "n/a", "n/a");
    return t;
  }
  std::string t = fmt::format(" {:>10.2f} {:>10.2f} {:>7.2f}", r.nccl_time_us, r.nccl_busbw_gbps,
                              r.nccl_time_us / r.time_us);
  if (r.rounds > 1) {
    const PairedRatio ratio = paired_ratio(Spread{r.time_us, r.time_min_us, r.time_max_us},
                                           Spread{r.nccl_time_us, r.nccl_time_min_us, r.nccl_time_max_us});
    t += fmt::format(" {:>11} {:>8}", range_text(ratio.low, ratio.high), to_string(verdict(ratio, target)));
  }
  return t;
}

}  // namespace canopy
