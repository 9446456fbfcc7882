// paired_rounds (paired_rounds.hpp).
#include "bench/harness/paired_rounds.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace canopy {

bool canopy_first(std::size_t size_index, int round) { return (size_index + static_cast<std::size_t>(round)) % 2 == 0; }

Spread spread_of(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return Spread{median, values.front(), values.back()};
}

PairedRatio paired_ratio(const Spread& canopy, const Spread& nccl) {
  if (canopy.median <= 0 || canopy.min <= 0 || canopy.max <= 0) return {};
  return PairedRatio{nccl.median / canopy.median, nccl.min / canopy.max, nccl.max / canopy.min};
}

TargetVerdict verdict(const PairedRatio& ratio, double target) {
  if (ratio.low >= target) return TargetVerdict::met;
  if (ratio.high < target) return TargetVerdict::missed;
  return TargetVerdict::overlaps;
}

const char* to_string(TargetVerdict v) {
  switch (v) {
    case TargetVerdict::met:
      return "met";
    case TargetVerdict::missed:
      return "missed";
    case TargetVerdict::overlaps:
      return "overlaps";
  }
  return "?";
}

std::string range_text(double low, double high) { return fmt::format("{:.2f}–{:.2f}", low, high); }

}  // namespace canopy
