// choose_protocol_limits and friends (see protocol_choice.hpp): an exhaustive search over the splits of the measured
// sizes into four ordered runs, a few thousand for a few dozen sizes.
#include "runtime/protocol/protocol_choice.hpp"

#include <fmt/format.h>

#include <limits>

#include "codegen/codegen_options.hpp"
#include "core/error.hpp"

namespace canopy {

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::low_latency:
      return "LL";
    case Protocol::ll128:
      return "LL128";
    case Protocol::direct:
      return "direct";
    case Protocol::planned:
      return "planned";
  }
  return "?";
}

Protocol protocol_at(const ProtocolLimits& limits, std::uint64_t bytes) {
  if (bytes <= static_cast<std::uint64_t>(limits.ll_bytes)) return Protocol::low_latency;
  if (bytes <= static_cast<std::uint64_t>(limits.ll128_bytes)) return Protocol::ll128;
  if (bytes <= static_cast<std::uint64_t>(limits.direct_bytes)) return Protocol::direct;
  return Protocol::planned;
}

std::string describe(const ProtocolLimits& limits) {
  std::vector<std::string> parts;
  std::int64_t below = 0;
  const auto add = [&](const char* name, std::int64_t limit) {
    if (limit > below) parts.push_back(fmt::format("{} to {}", name, format_byte_size(limit)));
    below = std::max(below, limit);
  };
  add("LL", limits.ll_bytes);
  add("LL128", limits.ll128_bytes);
  add("direct", limits.direct_bytes);
  return parts.empty() ? "planned only" : fmt::format("{}", fmt::join(parts, ", "));
}

namespace {

constexpr double kUnusable = std::numeric_limits<double>::infinity();

// Each size's time with protocol p over the fastest time there; infinite where p has none.
std::vector<std::array<double, kProtocols>> relative_times(const ProtocolTimes& t) {
  std::vector<std::array<double, kProtocols>> rel(t.sizes.size());
  for (std::size_t i = 0; i < t.sizes.size(); ++i) {
    double best = kUnusable;
    for (const std::optional<double>& us : t.us[i])
      if (us) best = std::min(best, *us);
    for (int p = 0; p < kProtocols; ++p) rel[i][p] = t.us[i][p] ? *t.us[i][p] / best : kUnusable;
  }
  return rel;
}

void check_table(const ProtocolTimes& t) {
  if (t.sizes.empty()) throw Error("protocol times: no sizes measured");
  if (t.us.size() != t.sizes.size() || t.incumbent.size() != t.sizes.size())
    throw Error(fmt::format("protocol times: {} sizes but {} rows of times and {} incumbents", t.sizes.size(),
                            t.us.size(), t.incumbent.size()));
  for (std::size_t i = 0; i < t.sizes.size(); ++i) {
    if (i > 0 && t.sizes[i] <= t.sizes[i - 1])
      throw Error(fmt::format("protocol times: sizes must ascend ({} after {})", t.sizes[i], t.sizes[i - 1]));
    for (const std::optional<double>& us : t.us[i])
      if (us && !(*us > 0 && *us < kUnusable))
        throw Error(fmt::format("protocol times: {} us at {} bytes is not a time", *us, t.sizes[i]));
    if (!t.us[i][static_cast<int>(t.incumbent[i])])
      throw Error(fmt::format("protocol times: the untuned choice at {} bytes ({}) was not measured", t.sizes[i],
                              to_string(t.incumbent[i])));
  }
}

}  // namespace

ProtocolChoice choose_protocol_limits(const ProtocolTimes& times, double gain) {
  check_table(times);
  const std::vector<std::array<double, kProtocols>> rel = relative_times(times);
  const std::size_t n = times.sizes.size();
  // prefix[p][i]: protocol p's relative time summed over sizes [0, i).
  std::array<std::vector<double>, kProtocols> prefix;
  for (int p = 0; p < kProtocols; ++p) {
    prefix[p].assign(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) prefix[p][i + 1] = prefix[p][i] + rel[i][p];
  }
  const auto run = [&](int p, std::size_t from, std::size_t to) {
    return from == to ? 0.0 : prefix[p][to] - prefix[p][from];
  };
  // Runs [0, a) LL, [a, b) LL128, [b, c) direct, [c, n) planned. Ties go to the split found first: longer runs of
  // the later protocols, as a is tried from 0 up.
  double best = kUnusable;
  std::size_t ba = 0, bb = 0, bc = 0;
  for (std::size_t a = 0; a <= n; ++a)
    for (std::size_t b = a; b <= n; ++b)
      for (std::size_t c = b; c <= n; ++c) {
        const double cost = run(0, 0, a) + run(1, a, b) + run(2, b, c) + run(3, c, n);
        if (cost < best) best = cost, ba = a, bb = b, bc = c;
      }
  if (best == kUnusable)
    throw Error("protocol times: no order of the protocols runs every size (the planned kernels must run them all)");
  ProtocolChoice choice;
  const auto limit = [&](std::size_t from, std::size_t to) {
    return from == to ? std::int64_t{0} : static_cast<std::int64_t>(times.sizes[to - 1]);
  };
  choice.limits = {limit(0, ba), limit(ba, bb), limit(bb, bc)};
  choice.cost = best;
  for (std::size_t i = 0; i < n; ++i) {
    choice.incumbent_cost += rel[i][static_cast<int>(times.incumbent[i])];
    choice.picked.push_back(protocol_at(choice.limits, times.sizes[i]));
    if (choice.picked.back() != times.incumbent[i]) ++choice.moved;
  }
  choice.changed = choice.moved > 0 && choice.incumbent_cost - choice.cost > gain * choice.moved;
  return choice;
}

}  // namespace canopy
