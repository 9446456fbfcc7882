// `canopy nccl-tests-compare`'s output for one pair of logs: text tables (nccl-tests' look, NEW/BASE ratios) and the
// same as JSON (see the header and the command's --help).
#include "tools/nccl_tests_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "bench/harness/benchmark.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {
namespace {

// NCCL_VERSION_CODE 22803 -> "2.28.3" (codes from 2.9 on are major*10000 + minor*100 + patch).
std::string nccl_version(const std::string& code) {
  int v = 0;
  const auto [end, ec] = std::from_chars(code.data(), code.data() + code.size(), v);
  if (ec != std::errc() || end != code.data() + code.size() || v < 20900) return code;
  return fmt::format("{}.{}.{}", v / 10000, v % 10000 / 100, v % 100);
}

// "Rank  0 Group  0 Pid 17809 on vm device  0 [0000:00:06] NVIDIA H100 80GB HBM3" -> "NVIDIA H100 80GB HBM3".
std::string device_name(const std::string& rank_line) {
  const std::size_t bracket = rank_line.find(']');
  if (bracket == std::string::npos) return rank_line;
  const std::size_t start = rank_line.find_first_not_of(' ', bracket + 1);
  return start == std::string::npos ? "" : rank_line.substr(start);
}

std::string ratio_text(const std::optional<double>& r) { return r ? fmt::format("{:.3f}", *r) : "-"; }

// A time or bandwidth with the digits nccl-tests 2.19 prints (6 characters): 2 decimals below 1000, 1 below 10000,
// then none (101.75, 1375.9, 179917).
std::string figure(double v) {
  return v >= 10000 ? fmt::format("{:.0f}", v) : v >= 1000 ? fmt::format("{:.1f}", v) : fmt::format("{:.2f}", v);
}

std::string wrong_text(const NcclTestsComparedSize& s) {
  const auto one = [](const NcclTestsTiming& t) { return t.wrong ? std::to_string(*t.wrong) : std::string("n/a"); };
  if (s.wrong)
    return fmt::format("WRONG {}/{} {}/{}", one(s.out_of_place.base), one(s.in_place.base), one(s.out_of_place.newer),
                       one(s.in_place.newer));
  const bool unchecked =
      !s.out_of_place.base.wrong || !s.in_place.base.wrong || !s.out_of_place.newer.wrong || !s.in_place.newer.wrong;
  return unchecked ? "n/a" : "0";
}

void describe_log(std::string& out, const char* role, const std::string& path, const NcclTestsOutput& log) {
  if (log.runs.empty()) {
    out += fmt::format("# {} {}: no nccl-tests output in it\n", role, path);
  } else {
    const NcclTestsRun& first = log.runs.front();
    out += fmt::format("# {} {}: nccl-tests {}, NCCL {} (headers {})\n", role, path,
                       first.version.empty() ? "?" : first.version,
                       first.nccl_library.empty() ? "?" : nccl_version(first.nccl_library),
                       first.nccl_headers.empty() ? "?" : nccl_version(first.nccl_headers));
  }
  for (std::size_t i = 0; i < log.runs.size(); ++i) {
    const NcclTestsRun& r = log.runs[i];
    std::set<std::string> devices;
    for (const std::string& d : r.devices) devices.insert(device_name(d));
    std::string end;
    if (r.concluded && r.out_of_bounds)
      end = fmt::format("Out of bounds values: {} {}", *r.out_of_bounds, r.out_of_bounds_ok ? "OK" : "FAILED");
    else if (r.concluded)
      end = "concluded";
    else
      end = "stopped before its footer (a failure or a killed run)";
    out += fmt::format("#   run {} (line {}): {}, {} rank{} on {}, {} rows, {}\n", i + 1, r.first_line,
                       r.collective.empty() ? "(unnamed)" : r.collective, r.ranks(), r.ranks() == 1 ? "" : "s",
                       devices.empty() ? "?" : fmt::format("{}", fmt::join(devices, ", ")), r.rows.size(), end);
  }
  constexpr std::size_t kShown = 6;
  for (std::size_t i = 0; i < log.failures.size() && i < kShown; ++i)
    out += fmt::format("#   failure at line {}: {}\n", log.failures[i].line, log.failures[i].text);
  if (log.failures.size() > kShown)
    out += fmt::format("#   ... and {} more failure lines\n", log.failures.size() - kShown);
  if (!log.skipped.empty())
    out +=
        fmt::format("#   {} other line{} skipped (not nccl-tests' own), the first at line {}: {}\n", log.skipped.size(),
                    log.skipped.size() == 1 ? "" : "s", log.skipped.front().line, log.skipped.front().text);
}

nlohmann::ordered_json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json layout_json(const NcclTestsRatio& r) {
  const auto wrong = [](const NcclTestsTiming& t) {
    return t.wrong ? nlohmann::ordered_json(*t.wrong) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json j;
  j["base_time_us"] = r.base.time_us;
  j["new_time_us"] = r.newer.time_us;
  j["time_ratio"] = optional_json(r.time_ratio);
  j["base_busbw_GBps"] = r.base.busbw_gbps;
  j["new_busbw_GBps"] = r.newer.busbw_gbps;
  j["busbw_ratio"] = optional_json(r.busbw_ratio);
  j["base_wrong"] = wrong(r.base);
  j["new_wrong"] = wrong(r.newer);
  j["base_rounds"] = r.base_spread.rounds;
  j["new_rounds"] = r.new_spread.rounds;
  j["busbw_ratio_min"] = optional_json(r.busbw_ratio_min);
  j["busbw_ratio_max"] = optional_json(r.busbw_ratio_max);
  return j;
}

// Under a table: each size's busbw ratio with its range over the rounds, and the verdict on the target, out of place.
std::string rounds_text(const NcclTestsTable& t, const std::optional<double>& target) {
  const bool rounds = std::any_of(t.sizes.begin(), t.sizes.end(), [](const NcclTestsComparedSize& s) {
    return s.out_of_place.busbw_ratio_min.has_value();
  });
  if (!rounds && !target) return "";
  std::string out = fmt::format("# busbw ratio NEW/BASE out of place over the rounds (medians; range: BASE's fastest "
                                "/ NEW's slowest .. BASE's slowest / NEW's fastest){}\n",
                                target ? fmt::format("; target {:g}, met only where the whole range clears it", *target)
                                       : "");
  out += fmt::format("#{:>8} {:>7} {:>17} {:>8}{}\n", "size", "ratio", "range", "rounds",
                     target ? fmt::format(" {:>18}", "verdict") : "");
  for (const NcclTestsComparedSize& s : t.sizes) {
    const NcclTestsRatio& r = s.out_of_place;
    if (!r.busbw_ratio) continue;
    out += fmt::format("{:>9} {:>7.3f} {:>17} {:>8}{}\n", bench_size_text(s.bytes), *r.busbw_ratio,
                       r.busbw_ratio_min ? fmt::format("{:.3f} .. {:.3f}", *r.busbw_ratio_min, *r.busbw_ratio_max)
                                         : std::string("-"),
                       fmt::format("{}/{}", r.base_spread.rounds, r.new_spread.rounds),
                       target ? fmt::format(" {:>18}", nccl_tests_verdict(r, *target)) : "");
  }
  return out;
}

nlohmann::ordered_json log_json(const std::string& path, const NcclTestsOutput& log) {
  nlohmann::ordered_json j;
  j["path"] = path;
  j["runs"] = nlohmann::ordered_json::array();
  for (const NcclTestsRun& r : log.runs) {
    nlohmann::ordered_json run;
    run["first_line"] = r.first_line;
    run["version"] = r.version;
    run["nccl_library"] = r.nccl_library;
    run["nccl_headers"] = r.nccl_headers;
    run["collective"] = r.collective;
    run["ranks"] = r.ranks();
    run["iters"] = r.iters ? nlohmann::ordered_json(*r.iters) : nlohmann::ordered_json(nullptr);
    run["timers"] = r.timers();
    run["devices"] = r.devices;
    run["rows"] = r.rows.size();
    run["out_of_bounds"] = r.out_of_bounds ? nlohmann::ordered_json(*r.out_of_bounds) : nlohmann::ordered_json(nullptr);
    run["concluded"] = r.concluded;
    j["runs"].push_back(run);
  }
  j["failures"] = nlohmann::ordered_json::array();
  for (const NcclTestsNote& n : log.failures) j["failures"].push_back({{"line", n.line}, {"text", n.text}});
  j["skipped_lines"] = log.skipped.size();
  return j;
}

}  // namespace

NcclTestsPairReport make_nccl_tests_report(const NcclTestsPair& pair, const NcclTestsReportOptions& options) {
  NcclTestsPairReport report;
  report.comparison = compare_nccl_tests(pair.base, pair.newer, "BASE " + pair.base_path, "NEW " + pair.new_path);
  for (const NcclTestsTable& t : report.comparison.tables) {
    for (const NcclTestsComparedSize& s : t.sizes) report.wrong_sizes += s.wrong ? 1 : 0;
    report.bench.push_back(options.bench.empty()
                               ? std::vector<NcclTestsBenchCheck>{}
                               : check_against_bench(t, options.bench, options.bench_in_place, options.tolerance));
    for (const NcclTestsBenchCheck& c : report.bench.back()) {
      ++report.bench_sizes;
      report.bench_within += c.within ? 1 : 0;
      report.new_over_bench += std::log(c.new_over_bench);
      report.base_over_bench += std::log(c.base_over_bench);
    }
  }
  if (report.bench_sizes > 0) {
    report.new_over_bench = std::exp(report.new_over_bench / report.bench_sizes);
    report.base_over_bench = std::exp(report.base_over_bench / report.bench_sizes);
  }
  return report;
}

std::string nccl_tests_report_text(const NcclTestsPair& pair, const NcclTestsPairReport& report,
                                   const NcclTestsReportOptions& options) {
  std::string out;
  describe_log(out, "BASE", pair.base_path, pair.base);
  describe_log(out, "NEW ", pair.new_path, pair.newer);
  const double percent = options.tolerance * 100;
  for (std::size_t i = 0; i < report.comparison.tables.size(); ++i) {
    const NcclTestsTable& t = report.comparison.tables[i];
    out += fmt::format("\n# {}: NEW/BASE\n", to_string(t.key));
    out += fmt::format("#{:9}{:^57}{:^57}\n", "", "out-of-place", "in-place");
    out += fmt::format("#{:>8} ", "size");
    for (int layout = 0; layout < 2; ++layout)
      out += fmt::format("{:>9} {:>9} {:>7} {:>9} {:>9} {:>7}  ", "base(us)", "new(us)", "time x", "base_bus",
                         "new_bus", "busbw x");
    out += "#wrong\n";
    for (const NcclTestsComparedSize& s : t.sizes) {
      out += fmt::format("{:>9} ", bench_size_text(s.bytes));
      for (const NcclTestsRatio* r : {&s.out_of_place, &s.in_place})
        out += fmt::format("{:>9} {:>9} {:>7} {:>9} {:>9} {:>7}  ", figure(r->base.time_us), figure(r->newer.time_us),
                           ratio_text(r->time_ratio), figure(r->base.busbw_gbps), figure(r->newer.busbw_gbps),
                           ratio_text(r->busbw_ratio));
      out += wrong_text(s) + "\n";
    }
    out += rounds_text(t, options.target);
    if (!t.only_base.empty()) out += fmt::format("# only in BASE: {}\n", bench_sizes_text(t.only_base));
    if (!t.only_new.empty()) out += fmt::format("# only in NEW: {}\n", bench_sizes_text(t.only_new));
    const std::vector<NcclTestsBenchCheck>& checks = report.bench[i];
    if (checks.empty()) continue;
    out += fmt::format("# beside canopy bench ({} rank{}, {}): busbw ratio NEW/BASE {} vs Canopy/NCCL\n",
                       checks.front().bench_ranks, checks.front().bench_ranks == 1 ? "" : "s",
                       checks.front().bench_device, options.bench_in_place ? "in place" : "out of place");
    if (checks.front().bench_ranks != t.key.ranks)
      out += fmt::format("# note: canopy bench ran {} ranks, nccl-tests {}: not the same measurement\n",
                         checks.front().bench_ranks, t.key.ranks);
    if (const int bench = checks.front().bench_iters; bench > 0 && t.new_iters && *t.new_iters != bench)
      out += fmt::format("# note: nccl-tests timed {} calls a loop (-n {}), canopy bench {} (--iters {}): below ~1 MiB "
                         "a call's time depends on the loop's length (on two H200s by up to a third), so the ratios "
                         "may differ there for that alone; run them alike\n",
                         *t.new_iters, *t.new_iters, bench, bench);
    if (const int timers = std::max(t.base_timers, t.new_timers); timers > 1)
      out += fmt::format("# note: nccl-tests made each size's time from {} timers (processes x threads): their mean, "
                         "unless it ran with -a (its log does not say); canopy bench reports the slowest rank's, "
                         "so run nccl-tests with -a 3 (the slowest) to compare alike\n",
                         timers);
    out += "# time NEW/Canopy: nccl-tests' NEW time over bench's Canopy time; BASE/NCCL: its BASE time over bench's\n"
           "# NCCL time (differ = BASE/NCCL over NEW/Canopy: a library that adds nothing keeps NEW/Canopy near 1)\n";
    out += fmt::format("#{:>8} {:>11} {:>9} {:>8} {:>11} {:>11} {:>10}\n", "size", "nccl-tests", "bench", "differ",
                       fmt::format("within {:g} %", percent), "NEW/Canopy", "BASE/NCCL");
    for (const NcclTestsBenchCheck& c : checks)
      out += fmt::format("{:>9} {:>11.3f} {:>9.3f} {:>+7.1f}% {:>11} {:>11.3f} {:>10.3f}\n", bench_size_text(c.bytes),
                         c.nccl_tests_ratio, c.bench_ratio, (c.nccl_tests_ratio / c.bench_ratio - 1) * 100,
                         c.within ? "yes" : "no", c.new_over_bench, c.base_over_bench);
  }
  if (!report.comparison.summaries.empty()) out += "\n";
  for (const NcclTestsSummary& s : report.comparison.summaries) {
    out += fmt::format("# {}, {} rank{}: busbw ratio NEW/BASE, geometric mean over every type and op (sizes)\n",
                       s.collective, s.ranks, s.ranks == 1 ? "" : "s");
    for (int band = 0; band < 3; ++band) {
      const NcclTestsBandMean& m = s.bands[band];
      out += fmt::format("#   {:<8} ", kNcclTestsBands[band].name);
      if (!m.out_of_place && !m.in_place)
        out += "-  (no size in this band)\n";
      else
        out += fmt::format("out of place {:>7} ({:>3})   in place {:>7} ({:>3})\n", ratio_text(m.out_of_place),
                           m.out_of_place_sizes, ratio_text(m.in_place), m.in_place_sizes);
    }
  }
  for (const std::string& note : report.comparison.notes) out += "# note: " + note + "\n";
  if (!options.bench.empty())
    out += fmt::format("# canopy bench check: {} of {} size{} within {:g} %{}\n", report.bench_within,
                       report.bench_sizes, report.bench_sizes == 1 ? "" : "s", percent,
                       report.bench_sizes == 0 ? " (no bench row of these collectives, types, ops and sizes)" : "");
  if (report.bench_sizes > 0)
    out += fmt::format("# time NEW/Canopy {:.3f}, BASE/NCCL {:.3f} (geometric means over those sizes)\n",
                       report.new_over_bench, report.base_over_bench);
  if (report.wrong_sizes > 0)
    out += fmt::format("# {} size{} with a nonzero #wrong (marked WRONG: BASE out/in, NEW out/in)\n",
                       report.wrong_sizes, report.wrong_sizes == 1 ? "" : "s");
  return out;
}

nlohmann::ordered_json nccl_tests_report_json(const NcclTestsPair& pair, const NcclTestsPairReport& report,
                                              const NcclTestsReportOptions& options) {
  nlohmann::ordered_json j;
  j["base"] = log_json(pair.base_path, pair.base);
  j["new"] = log_json(pair.new_path, pair.newer);
  j["tables"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < report.comparison.tables.size(); ++i) {
    const NcclTestsTable& t = report.comparison.tables[i];
    nlohmann::ordered_json table;
    table["collective"] = t.key.collective;
    table["ranks"] = t.key.ranks;
    table["type"] = t.key.type;
    table["redop"] = t.key.redop;
    table["root"] = t.key.root;
    table["sizes"] = nlohmann::ordered_json::array();
    for (const NcclTestsComparedSize& s : t.sizes) {
      nlohmann::ordered_json row;
      row["bytes"] = s.bytes;
      row["base_line"] = s.base_line;
      row["new_line"] = s.new_line;
      row["wrong"] = s.wrong;
      row["out_of_place"] = layout_json(s.out_of_place);
      row["in_place"] = layout_json(s.in_place);
      if (options.target) row["verdict"] = nccl_tests_verdict(s.out_of_place, *options.target);
      table["sizes"].push_back(row);
    }
    table["only_base"] = t.only_base;
    table["only_new"] = t.only_new;
    table["base_iters"] = t.base_iters ? nlohmann::ordered_json(*t.base_iters) : nlohmann::ordered_json(nullptr);
    table["new_iters"] = t.new_iters ? nlohmann::ordered_json(*t.new_iters) : nlohmann::ordered_json(nullptr);
    table["base_timers"] = t.base_timers;
    table["new_timers"] = t.new_timers;
    table["bench"] = nlohmann::ordered_json::array();
    for (const NcclTestsBenchCheck& c : report.bench[i])
      table["bench"].push_back({{"bytes", c.bytes},
                                {"nccl_tests_ratio", c.nccl_tests_ratio},
                                {"bench_ratio", c.bench_ratio},
                                {"within", c.within},
                                {"new_over_bench", c.new_over_bench},
                                {"base_over_bench", c.base_over_bench},
                                {"bench_ranks", c.bench_ranks},
                                {"bench_iters", c.bench_iters},
                                {"bench_device", c.bench_device}});
    j["tables"].push_back(table);
  }
  j["summaries"] = nlohmann::ordered_json::array();
  for (const NcclTestsSummary& s : report.comparison.summaries) {
    nlohmann::ordered_json summary;
    summary["collective"] = s.collective;
    summary["ranks"] = s.ranks;
    summary["bands"] = nlohmann::ordered_json::array();
    for (int band = 0; band < 3; ++band)
      summary["bands"].push_back(
          {{"band", kNcclTestsBands[band].name},
           {"from_bytes", kNcclTestsBands[band].from},
           {"to_bytes", band == 2 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(kNcclTestsBands[band].to)},
           {"out_of_place", optional_json(s.bands[band].out_of_place)},
           {"out_of_place_sizes", s.bands[band].out_of_place_sizes},
           {"in_place", optional_json(s.bands[band].in_place)},
           {"in_place_sizes", s.bands[band].in_place_sizes}});
    j["summaries"].push_back(summary);
  }
  j["notes"] = report.comparison.notes;
  j["wrong_sizes"] = report.wrong_sizes;
  if (!options.bench.empty()) {
    j["bench_sizes"] = report.bench_sizes;
    j["bench_within"] = report.bench_within;
    if (report.bench_sizes > 0) {
      j["new_over_bench"] = report.new_over_bench;
      j["base_over_bench"] = report.base_over_bench;
    }
    j["tolerance"] = options.tolerance;
  }
  return j;
}

}  // namespace canopy::cli
