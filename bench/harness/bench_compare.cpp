// compare_bench_rows and its text: two canopy bench runs side by side (see the header).
#include "bench/harness/bench_compare.hpp"

#include <fmt/format.h>

#include <map>

namespace canopy {
namespace {

BenchCompareKey key_of(const BenchRow& row) {
  // A program by its name; a point-to-point call (sendrecv, alltoall, gather, scatter) by its own.
  const std::string what = !row.algorithm.empty() ? row.algorithm
                           : !row.goal.empty()    ? row.goal
                                                  : to_string(row.collective);
  return BenchCompareKey{what, row.dtype, row.op, row.ranks};
}

// Each key's rows by size; a size given twice keeps the later row.
std::map<BenchCompareKey, std::map<std::uint64_t, BenchRow>> by_key(const std::vector<BenchRow>& rows) {
  std::map<BenchCompareKey, std::map<std::uint64_t, BenchRow>> out;
  for (const BenchRow& row : rows) out[key_of(row)][row.bytes] = row;
  return out;
}

std::string wrong_text(const BenchComparedSize& s) {
  if (s.wrong) return fmt::format("WRONG {}/{}", s.base.errors, s.newer.errors);
  if (s.base.errors < 0 && s.newer.errors < 0) return "-";
  return "0";
}

std::string ratio_text(const std::optional<double>& r, int width) {
  return r ? fmt::format("{:>{}.3f}", *r, width) : fmt::format("{:>{}}", "-", width);
}

}  // namespace

std::string to_string(const BenchCompareKey& key) {
  const bool reduces = key.op != ReduceOp::sum || key.collective.find("reduce") != std::string::npos;
  return fmt::format("{} {}{}, {} rank{}", key.collective, to_string(key.dtype),
                     reduces ? " " + to_string(key.op) : "", key.ranks, key.ranks == 1 ? "" : "s");
}

BenchComparison compare_bench_rows(const std::vector<BenchRow>& base, const std::vector<BenchRow>& newer) {
  BenchComparison out;
  const auto base_keys = by_key(base), new_keys = by_key(newer);
  for (const auto& [key, base_rows] : base_keys) {
    const auto other = new_keys.find(key);
    if (other == new_keys.end()) {
      out.notes.push_back(fmt::format("{}: only in BASE", to_string(key)));
      continue;
    }
    BenchCompareTable table;
    table.key = key;
    table.base_procs = base_rows.begin()->second.procs;
    table.new_procs = other->second.begin()->second.procs;
    std::vector<double> band_ratios[3];
    for (const auto& [bytes, b] : base_rows) {
      const auto n = other->second.find(bytes);
      if (n == other->second.end()) {
        table.only_base.push_back(bytes);
        continue;
      }
      BenchComparedSize s;
      s.bytes = bytes;
      s.base = b;
      s.newer = n->second;
      if (b.time_us > 0 && s.newer.time_us > 0) {
        s.time_ratio = s.newer.time_us / b.time_us;
        if (bytes > 0) s.busbw_ratio = b.time_us / s.newer.time_us;
      }
      if (b.nccl_time_us > 0 && s.newer.nccl_time_us > 0) s.nccl_ratio = s.newer.nccl_time_us / b.nccl_time_us;
      s.wrong = b.errors > 0 || s.newer.errors > 0;
      out.wrong_sizes += s.wrong ? 1 : 0;
      for (int band = 0; band < 3; ++band)
        if (s.busbw_ratio && bytes >= kNcclTestsBands[band].from && bytes <= kNcclTestsBands[band].to)
          band_ratios[band].push_back(*s.busbw_ratio);
      table.sizes.push_back(std::move(s));
    }
    for (const auto& [bytes, row] : other->second)
      if (!base_rows.count(bytes)) table.only_new.push_back(bytes);
    for (int band = 0; band < 3; ++band) {
      table.bands[band].out_of_place_sizes = static_cast<int>(band_ratios[band].size());
      table.bands[band].out_of_place = geometric_mean(band_ratios[band]);
    }
    if (table.sizes.empty())
      out.notes.push_back(fmt::format("{}: no size in both runs", to_string(key)));
    else
      out.tables.push_back(std::move(table));
  }
  for (const auto& [key, rows] : new_keys)
    if (!base_keys.count(key)) out.notes.push_back(fmt::format("{}: only in NEW", to_string(key)));
  return out;
}

std::string bench_comparison_text(const BenchComparison& comparison, const std::string& base_name,
                                  const std::string& new_name) {
  std::string text = fmt::format("# BASE {}\n# NEW  {}\n", base_name, new_name);
  for (const BenchCompareTable& t : comparison.tables) {
    const auto procs = [](int p) { return p > 1 ? fmt::format("{} processes", p) : std::string("one process"); };
    text += fmt::format("\n== {} (BASE {}, NEW {})\n", to_string(t.key), procs(t.base_procs), procs(t.new_procs));
    text += fmt::format("{:>8} {:>10} {:>10} {:>7} {:>10} {:>10} {:>8} {:>7}  {}\n", "size", "BASE us", "NEW us",
                        "time x", "BASE GB/s", "NEW GB/s", "busbw x", "NCCL x", "#wrong");
    for (const BenchComparedSize& s : t.sizes)
      text += fmt::format("{:>8} {:>10.2f} {:>10.2f} {} {:>10.2f} {:>10.2f} {} {}  {}\n", bench_size_text(s.bytes),
                          s.base.time_us, s.newer.time_us, ratio_text(s.time_ratio, 7), s.base.busbw_gbps,
                          s.newer.busbw_gbps, ratio_text(s.busbw_ratio, 8), ratio_text(s.nccl_ratio, 7),
                          wrong_text(s));
    text += "  busbw x, geometric mean:";
    for (int band = 0; band < 3; ++band) {
      const NcclTestsBandMean& m = t.bands[band];
      text += m.out_of_place ? fmt::format("  {} {:.3f} ({} size{})", kNcclTestsBands[band].name, *m.out_of_place,
                                           m.out_of_place_sizes, m.out_of_place_sizes == 1 ? "" : "s")
                             : fmt::format("  {} -", kNcclTestsBands[band].name);
    }
    text += "\n";
    if (!t.only_base.empty()) text += fmt::format("  only in BASE: {}\n", bench_sizes_text(t.only_base));
    if (!t.only_new.empty()) text += fmt::format("  only in NEW: {}\n", bench_sizes_text(t.only_new));
  }
  for (const std::string& note : comparison.notes) text += fmt::format("# {}\n", note);
  return text;
}

}  // namespace canopy
