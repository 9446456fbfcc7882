// compare_bench_rows: two `canopy bench --json` runs (BASE, e.g. the defaults, and NEW, e.g. under CANOPY_CHUNK=1MiB)
// -> one table per (collective or program, type, operator, ranks) of the sizes both have: each run's time and busbw,
// NEW/BASE ratios, #wrong, and where both ran NCCL beside (--vs-nccl) NCCL's own NEW/BASE time, which shows how far
// the machine moved between the two runs. Per table, the geometric mean of the busbw ratio in the bands of
// kNcclTestsBands. What `canopy bench-compare` prints; an A/B of settings reads this, not two tables by eye.
//
// busbw ratio = BASE time / NEW time (equal size and ranks; exact where the printed busbw is rounded). Rows whose
// key and size repeat within one run (outputs appended) count once, the later row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/harness/benchmark.hpp"
#include "bench/harness/nccl_tests_compare.hpp"

namespace canopy {

struct BenchCompareKey {
  std::string collective;  // "allreduce", or a program's name
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int ranks = 0;
  auto operator<=>(const BenchCompareKey&) const = default;
};

std::string to_string(const BenchCompareKey& key);  // "allreduce f32 sum, 2 ranks"

struct BenchComparedSize {
  std::uint64_t bytes = 0;
  BenchRow base, newer;
  std::optional<double> time_ratio;   // NEW / BASE time
  std::optional<double> busbw_ratio;  // BASE / NEW time; none at size 0 or a zero time
  std::optional<double> nccl_ratio;   // NEW's NCCL time / BASE's, where both ran NCCL
  bool wrong = false;                 // either run counted a wrong element at this size
};

struct BenchCompareTable {
  BenchCompareKey key;
  int base_procs = 1, new_procs = 1;  // processes each run used (canopy bench --procs)
  std::vector<BenchComparedSize> sizes;
  std::vector<std::uint64_t> only_base, only_new;
  NcclTestsBandMean bands[3];  // out_of_place: the busbw ratio's geometric mean per band; in_place unused
};

struct BenchComparison {
  std::vector<BenchCompareTable> tables;
  int wrong_sizes = 0;
  std::vector<std::string> notes;  // keys only one run has
};

BenchComparison compare_bench_rows(const std::vector<BenchRow>& base, const std::vector<BenchRow>& newer);

// The tables as text: a heading per table, a row per size, the band means; then the notes.
std::string bench_comparison_text(const BenchComparison& comparison, const std::string& base_name,
                                  const std::string& new_name);

}  // namespace canopy
