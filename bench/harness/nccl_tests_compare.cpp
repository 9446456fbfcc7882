// compare_nccl_tests and check_against_bench: ratio tables of two nccl-tests logs, and their check against
// canopy bench's own Canopy/NCCL ratios (see the header for the definitions).
#include "bench/harness/nccl_tests_compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace canopy {
namespace {

using Sizes = std::map<std::uint64_t, std::vector<const NcclTestsRow*>>;
using Keyed = std::map<NcclTestsKey, Sizes>;

Keyed by_key(const NcclTestsOutput& log) {
  Keyed out;
  for (const NcclTestsRun& run : log.runs)
    for (const NcclTestsRow& row : run.rows)
      out[NcclTestsKey{run.collective, run.ranks(), row.type, row.redop, row.root}][row.bytes].push_back(&row);
  return out;
}

// Whether `run` is of `key`'s binary and rank count (a table's rows may come from several such runs).
bool of_key(const NcclTestsRun& run, const NcclTestsKey& key) {
  return run.collective == key.collective && run.ranks() == key.ranks;
}

// The timed calls a loop of `log`'s runs of `key`'s binary and rank count: nullopt where none printed it or they
// differ.
std::optional<int> iters_of(const NcclTestsOutput& log, const NcclTestsKey& key) {
  std::optional<int> out;
  for (const NcclTestsRun& run : log.runs) {
    if (!of_key(run, key) || !run.iters) continue;
    if (out && *out != *run.iters) return std::nullopt;
    out = run.iters;
  }
  return out;
}

// The most timers (processes x threads) among `log`'s runs of `key`'s binary and rank count; 1 for none.
int timers_of(const NcclTestsOutput& log, const NcclTestsKey& key) {
  int most = 1;
  for (const NcclTestsRun& run : log.runs)
    if (of_key(run, key)) most = std::max(most, run.timers());
  return most;
}

// The row of median out-of-place time (the lower median of an even count; equal times keep the log's order).
const NcclTestsRow& median_row(std::vector<const NcclTestsRow*> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const NcclTestsRow* a, const NcclTestsRow* b) {
    return a->out_of_place.time_us < b->out_of_place.time_us;
  });
  return *rows[(rows.size() - 1) / 2];
}

// The spread of one layout's times over a size's rows.
NcclTestsSpread spread(const std::vector<const NcclTestsRow*>& rows, bool in_place) {
  NcclTestsSpread s;
  s.rounds = static_cast<int>(rows.size());
  bool first = true;
  for (const NcclTestsRow* row : rows) {
    const double t = (in_place ? row->in_place : row->out_of_place).time_us;
    s.min_us = first ? t : std::min(s.min_us, t);
    s.max_us = first ? t : std::max(s.max_us, t);
    first = false;
  }
  return s;
}

NcclTestsRatio ratio(const NcclTestsTiming& base, const NcclTestsTiming& newer, std::uint64_t bytes, int ranks) {
  NcclTestsRatio r{base, newer, std::nullopt, std::nullopt, {}, {}, std::nullopt, std::nullopt};
  if (base.time_us > 0) r.time_ratio = newer.time_us / base.time_us;
  if (bytes == 0) return r;
  if (ranks > 0) {
    if (newer.time_us > 0) r.busbw_ratio = base.time_us / newer.time_us;
  } else if (base.busbw_gbps > 0 && newer.busbw_gbps > 0) {
    r.busbw_ratio = newer.busbw_gbps / base.busbw_gbps;
  }
  return r;
}

bool nonzero(const NcclTestsTiming& t) { return t.wrong && *t.wrong != 0; }

std::string plural(std::size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::string to_string(const NcclTestsKey& key) {
  return fmt::format("{} {} {}, {}{}", key.collective.empty() ? "(unnamed test)" : key.collective, key.type, key.redop,
                     key.ranks > 0 ? plural(key.ranks, "rank", "ranks") : "ranks not printed",
                     key.root >= 0 ? fmt::format(", root {}", key.root) : "");
}

std::optional<Collective> nccl_tests_collective(std::string_view binary) {
  if (binary.size() > 5 && binary.substr(binary.size() - 5) == "_perf") binary.remove_suffix(5);
  if (binary == "all_reduce") return Collective::allreduce;
  if (binary == "all_gather") return Collective::allgather;
  if (binary == "reduce_scatter") return Collective::reducescatter;
  if (binary == "broadcast") return Collective::broadcast;
  if (binary == "reduce") return Collective::reduce;
  return std::nullopt;
}

NcclTestsComparison compare_nccl_tests(const NcclTestsOutput& base, const NcclTestsOutput& newer,
                                       const std::string& base_name, const std::string& new_name) {
  NcclTestsComparison out;
  const Keyed b = by_key(base), n = by_key(newer);
  // Keys one log lacks: one note per key, or one per binary and rank count the other log lacks altogether.
  const auto lacking = [&](const Keyed& here, const Keyed& there, const std::string& name) {
    std::set<std::pair<std::string, int>> present;  // (binary, ranks) of `there`
    for (const auto& [key, sizes] : there) present.insert({key.collective, key.ranks});
    std::map<std::pair<std::string, int>, std::pair<std::size_t, std::size_t>> absent;  // -> tables, rows
    for (const auto& [key, sizes] : here) {
      if (there.count(key)) continue;
      if (present.count({key.collective, key.ranks})) {
        out.notes.push_back(
            fmt::format("{}: only in {} ({})", to_string(key), name, plural(sizes.size(), "size", "sizes")));
        continue;
      }
      auto& [tables, rows] = absent[{key.collective, key.ranks}];
      ++tables;
      for (const auto& [bytes, r] : sizes) rows += r.size();
    }
    for (const auto& [which, count] : absent)
      out.notes.push_back(
          fmt::format("{}, {}: only in {} ({}, {})", which.first.empty() ? "(unnamed test)" : which.first,
                      which.second > 0 ? plural(which.second, "rank", "ranks") : "ranks not printed", name,
                      plural(count.first, "type/op table", "type/op tables"), plural(count.second, "row", "rows")));
  };
  lacking(b, n, base_name);
  lacking(n, b, new_name);
  const auto repeated = [&](const NcclTestsKey& key, const Sizes& sizes, const std::string& name) {
    std::size_t most = 0;
    for (const auto& [bytes, rows] : sizes) most = std::max(most, rows.size());
    if (most > 1)
      out.notes.push_back(
          fmt::format("{}: {} holds sizes up to {} times; each size's row is the one of median "
                      "out-of-place time, and the ratio's range spans the times' spreads",
                      to_string(key), name, most));
  };

  std::map<std::pair<std::string, int>, std::vector<std::vector<double>>> band_ratios;  // [band * 2 + in_place]
  for (const auto& [key, base_sizes] : b) {
    const auto found = n.find(key);
    if (found == n.end()) continue;
    const Sizes& new_sizes = found->second;
    repeated(key, base_sizes, base_name);
    repeated(key, new_sizes, new_name);
    NcclTestsTable table{key, {}, {}, {}, iters_of(base, key), iters_of(newer, key), timers_of(base, key),
                         timers_of(newer, key)};
    if (table.base_iters && table.new_iters && *table.base_iters != *table.new_iters)
      out.notes.push_back(fmt::format("{}: {} timed {} calls a loop (-n {}), {} {}: the time per call of small sizes "
                                      "depends on the loop's length; run both alike",
                                      to_string(key), base_name, *table.base_iters, *table.base_iters, new_name,
                                      *table.new_iters));
    for (const auto& [bytes, rows] : base_sizes) {
      const auto other = new_sizes.find(bytes);
      if (other == new_sizes.end()) {
        table.only_base.push_back(bytes);
        continue;
      }
      const NcclTestsRow& x = median_row(rows);
      const NcclTestsRow& y = median_row(other->second);
      NcclTestsComparedSize s;
      s.bytes = bytes;
      s.out_of_place = ratio(x.out_of_place, y.out_of_place, bytes, key.ranks);
      s.in_place = ratio(x.in_place, y.in_place, bytes, key.ranks);
      for (const bool in_place : {false, true}) {
        NcclTestsRatio& r = in_place ? s.in_place : s.out_of_place;
        r.base_spread = spread(rows, in_place);
        r.new_spread = spread(other->second, in_place);
        if (bytes > 0 && key.ranks > 0 && (r.base_spread.rounds > 1 || r.new_spread.rounds > 1) &&
            r.new_spread.min_us > 0 && r.new_spread.max_us > 0) {
          r.busbw_ratio_min = r.base_spread.min_us / r.new_spread.max_us;
          r.busbw_ratio_max = r.base_spread.max_us / r.new_spread.min_us;
        }
      }
      s.wrong = nonzero(x.out_of_place) || nonzero(x.in_place) || nonzero(y.out_of_place) || nonzero(y.in_place);
      s.base_line = x.line;
      s.new_line = y.line;
      table.sizes.push_back(s);
    }
    for (const auto& [bytes, rows] : new_sizes)
      if (!base_sizes.count(bytes)) table.only_new.push_back(bytes);
    if (table.sizes.empty()) {
      out.notes.push_back(fmt::format("{}: no size in both logs", to_string(key)));
      continue;
    }
    auto& ratios = band_ratios[{key.collective, key.ranks}];
    ratios.resize(6);
    for (const NcclTestsComparedSize& s : table.sizes)
      for (int band = 0; band < 3; ++band) {
        if (s.bytes < kNcclTestsBands[band].from || s.bytes > kNcclTestsBands[band].to) continue;
        if (s.out_of_place.busbw_ratio && *s.out_of_place.busbw_ratio > 0)
          ratios[band * 2].push_back(*s.out_of_place.busbw_ratio);
        if (s.in_place.busbw_ratio && *s.in_place.busbw_ratio > 0)
          ratios[band * 2 + 1].push_back(*s.in_place.busbw_ratio);
      }
    out.tables.push_back(std::move(table));
  }
  for (const auto& [which, ratios] : band_ratios) {
    NcclTestsSummary s;
    s.collective = which.first;
    s.ranks = which.second;
    for (int band = 0; band < 3; ++band) {
      s.bands[band].out_of_place = geometric_mean(ratios[band * 2]);
      s.bands[band].in_place = geometric_mean(ratios[band * 2 + 1]);
      s.bands[band].out_of_place_sizes = static_cast<int>(ratios[band * 2].size());
      s.bands[band].in_place_sizes = static_cast<int>(ratios[band * 2 + 1].size());
    }
    out.summaries.push_back(s);
  }
  return out;
}

std::string nccl_tests_verdict(const NcclTestsRatio& r, double target) {
  if (!r.busbw_ratio) return "n/a";
  if (!r.busbw_ratio_min || !r.busbw_ratio_max) return *r.busbw_ratio >= target ? "met (one round)" : "missed (one round)";
  if (*r.busbw_ratio_min >= target) return "met";
  if (*r.busbw_ratio_max < target) return "missed";
  return "overlaps";
}

std::optional<double> geometric_mean(const std::vector<double>& ratios) {
  if (ratios.empty()) return std::nullopt;
  double logs = 0;
  for (double x : ratios) logs += std::log(x);
  return std::exp(logs / static_cast<double>(ratios.size()));
}

std::vector<NcclTestsBenchCheck> check_against_bench(const NcclTestsTable& table, const std::vector<BenchRow>& bench,
                                                     bool in_place, double tolerance) {
  const std::optional<Collective> collective = nccl_tests_collective(table.key.collective);
  const std::optional<DataType> dtype = parse_data_type(table.key.type);
  if (!collective || !dtype) return {};
  const std::optional<ReduceOp> op = parse_reduce_op(table.key.redop);
  if (reduces(*collective) && !op) return {};  // mulsum: no such bench row
  std::vector<const BenchRow*> rows;
  for (const BenchRow& r : bench)
    if (r.collective == *collective && r.dtype == *dtype && (!reduces(*collective) || r.op == *op) &&
        r.algorithm.empty() && r.nccl_time_us > 0 && r.time_us > 0)
      rows.push_back(&r);
  if (std::any_of(rows.begin(), rows.end(), [&](const BenchRow* r) { return r->ranks == table.key.ranks; }))
    std::erase_if(rows, [&](const BenchRow* r) { return r->ranks != table.key.ranks; });
  std::vector<NcclTestsBenchCheck> out;
  for (const NcclTestsComparedSize& s : table.sizes) {
    const std::optional<double>& ours = in_place ? s.in_place.busbw_ratio : s.out_of_place.busbw_ratio;
    if (!ours) continue;
    std::vector<double> ratios, canopy_us, nccl_us;
    const BenchRow* first = nullptr;
    bool one_loop_length = true;
    for (const BenchRow* r : rows)
      if (r->bytes == s.bytes) {
        ratios.push_back(r->nccl_time_us / r->time_us);
        canopy_us.push_back(r->time_us);
        nccl_us.push_back(r->nccl_time_us);
        if (!first) first = r;
        one_loop_length = one_loop_length && r->iters == first->iters;
      }
    if (ratios.empty()) continue;
    const NcclTestsRatio& timed = in_place ? s.in_place : s.out_of_place;
    NcclTestsBenchCheck c;
    c.bytes = s.bytes;
    c.nccl_tests_ratio = *ours;
    c.bench_ratio = median(ratios);
    c.within = std::abs(c.nccl_tests_ratio / c.bench_ratio - 1) <= tolerance;
    c.new_over_bench = timed.newer.time_us / median(canopy_us);
    c.base_over_bench = timed.base.time_us / median(nccl_us);
    c.bench_ranks = first->ranks;
    c.bench_iters = one_loop_length ? first->iters : 0;
    c.bench_device = first->device;
    out.push_back(c);
  }
  return out;
}

}  // namespace canopy
