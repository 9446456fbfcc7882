// What `canopy nccl-tests-compare` prints and writes for one BASE/NEW pair of nccl-tests logs: each log's header
// (version, NCCL, binaries, device) and its failure lines, a ratio table per (collective, ranks, type, redop, root)
// (with, where the logs hold several rounds, each size's busbw ratio range over them and the verdict on a target),
// the check against canopy bench rows under each table, the per-collective band means, as text or as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/harness/nccl_tests_compare.hpp"

namespace canopy::cli {

struct NcclTestsPair {
  std::string base_path, new_path;
  NcclTestsOutput base, newer;
};

struct NcclTestsReportOptions {
  std::vector<BenchRow> bench;  // canopy bench --json rows (empty: no check)
  bool bench_in_place = false;  // check the in-place ratios (canopy bench --in-place), else out of place
  double tolerance = 0.05;
  std::optional<double> target;  // a busbw ratio NEW/BASE to meet: a verdict per size over the rounds' spreads
};

struct NcclTestsPairReport {
  NcclTestsComparison comparison;
  std::vector<std::vector<NcclTestsBenchCheck>> bench;  // per table
  int wrong_sizes = 0;                                  // sizes with a nonzero #wrong in either log
  int bench_sizes = 0, bench_within = 0;
  // Geometric means over the checked sizes of NcclTestsBenchCheck's new_over_bench and base_over_bench (0: none).
  double new_over_bench = 0, base_over_bench = 0;
};

NcclTestsPairReport make_nccl_tests_report(const NcclTestsPair& pair, const NcclTestsReportOptions& options);

std::string nccl_tests_report_text(const NcclTestsPair& pair, const NcclTestsPairReport& report,
                                   const NcclTestsReportOptions& options);

nlohmann::ordered_json nccl_tests_report_json(const NcclTestsPair& pair, const NcclTestsPairReport& report,
                                              const NcclTestsReportOptions& options);

}  // namespace canopy::cli
