// compare_nccl_tests: two parsed nccl-tests logs of the same binaries (BASE, e.g. the real NCCL, and NEW, e.g. the
// same run through libcanopy_nccl.so) -> one table per (collective, ranks, type, redop, root) of the sizes both
// have, with NEW/BASE time and busbw ratios out of place and in place, #wrong flagged, and per (collective, ranks)
// the geometric mean of the busbw ratio in three size bands. check_against_bench puts a table's busbw ratios beside
// `canopy bench --json` rows' Canopy/NCCL ratios of the same collective, type, operator and size.
//
// Ratios: time ratio = NEW time / BASE time. busbw ratio = NEW busbw / BASE busbw, which at equal size and ranks is
// BASE time / NEW time exactly, and is computed so (nccl-tests prints times to 3 or more significant digits but
// bandwidths to 2 decimals: 0.00 below 5 MB/s); only where a log names no ranks is it the printed busbw's ratio.
// Size 0 has no busbw ratio. A log that holds a key's size several times (outputs appended) gives the row whose
// out-of-place time is the median.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/harness/benchmark.hpp"
#include "bench/harness/nccl_tests_output.hpp"

namespace canopy {

struct NcclTestsKey {
  std::string collective;  // the binary's name as nccl-tests prints it: all_reduce_perf
  int ranks = 0;           // its "Rank" lines (0: none printed)
  std::string type;        // float, bfloat16, ...
  std::string redop;       // sum, ..., none
  int root = -1;
  auto operator<=>(const NcclTestsKey&) const = default;
};

// "all_reduce_perf float sum, 1 rank" (", root 0" for rooted collectives).
std::string to_string(const NcclTestsKey& key);

// Where a log holds a size several times (rounds appended, as bench/device-steps/nccltests.sh runs them), each side's
// figures are its median row's, and the spread of its times is kept: the ratio's range is what the two spreads allow.
struct NcclTestsSpread {
  int rounds = 1;               // rows of this size in the log
  double min_us = 0, max_us = 0;  // the fastest and slowest of their times
};

struct NcclTestsRatio {
  NcclTestsTiming base, newer;
  std::optional<double> time_ratio;   // NEW / BASE time
  std::optional<double> busbw_ratio;  // NEW / BASE busbw (see the header)
  NcclTestsSpread base_spread, new_spread;
  // The busbw ratio's range over the spreads, BASE's fastest / NEW's slowest to BASE's slowest / NEW's fastest (ranks
  // printed, both sides timed several times); nullopt otherwise.
  std::optional<double> busbw_ratio_min, busbw_ratio_max;
};

// A target for the busbw ratio NEW / BASE met only when the whole range clears it (canopy bench's rule): "met" when
// the range's low end is at least `target`, "missed" when its high end is below, else "overlaps"; a ratio without a
// range is "met" or "missed" by itself and marked "one round".
std::string nccl_tests_verdict(const NcclTestsRatio& ratio, double target);

struct NcclTestsComparedSize {
  std::uint64_t bytes = 0;
  NcclTestsRatio out_of_place, in_place;
  bool wrong = false;  // a nonzero #wrong in either log, either layout
  int base_line = 0, new_line = 0;
};

struct NcclTestsTable {
  NcclTestsKey key;
  std::vector<NcclTestsComparedSize> sizes;        // ascending
  std::vector<std::uint64_t> only_base, only_new;  // sizes one log lacks
  // Each log's timed calls a loop (-n) for this binary and rank count; nullopt: not printed, or its runs differ.
  std::optional<int> base_iters, new_iters;
  // The most timers (NcclTestsRun::timers: processes x threads) of each log's runs of this binary and rank count:
  // above 1, nccl-tests' time is their mean unless it ran with -a 3 (the slowest, as canopy bench --procs reports).
  int base_timers = 1, new_timers = 1;
};

// Size bands of the summary, bounds inclusive: <= 64 KiB, 1-16 MiB, >= 256 MiB.
struct NcclTestsBand {
  const char* name;
  std::uint64_t from, to;
};
inline constexpr NcclTestsBand kNcclTestsBands[3] = {
    {"<= 64K", 1, 64ull << 10}, {"1M-16M", 1ull << 20, 16ull << 20}, {">= 256M", 256ull << 20, ~0ull}};

// The geometric mean of positive ratios; nullopt for none.
std::optional<double> geometric_mean(const std::vector<double>& ratios);

struct NcclTestsBandMean {
  std::optional<double> out_of_place, in_place;  // geometric mean of the busbw ratio; nullopt: no size in the band
  int out_of_place_sizes = 0, in_place_sizes = 0;
};

struct NcclTestsSummary {
  std::string collective;
  int ranks = 0;
  NcclTestsBandMean bands[3];  // kNcclTestsBands' order, over every type and operator of the collective
};

struct NcclTestsComparison {
  std::vector<NcclTestsTable> tables;       // ordered by key
  std::vector<NcclTestsSummary> summaries;  // one per (collective, ranks) with a table
  std::vector<std::string> notes;           // keys one log lacks, repeated sizes, loops of unlike lengths
};

NcclTestsComparison compare_nccl_tests(const NcclTestsOutput& base, const NcclTestsOutput& newer,
                                       const std::string& base_name, const std::string& new_name);

// Canopy's name for an nccl-tests binary: all_reduce_perf -> allreduce, ..., reduce_scatter_perf ->
// reducescatter; nullopt for binaries without a Canopy collective (alltoall_perf, sendrecv_perf, ...).
std::optional<Collective> nccl_tests_collective(std::string_view binary);

struct NcclTestsBenchCheck {
  std::uint64_t bytes = 0;
  double nccl_tests_ratio = 0;  // the table's busbw ratio NEW / BASE
  double bench_ratio = 0;       // canopy bench's Canopy busbw / NCCL busbw (= NCCL time / Canopy time)
  bool within = false;          // |nccl_tests_ratio / bench_ratio - 1| <= tolerance
  // Where a difference comes from: nccl-tests' NEW time / bench's Canopy time, and its BASE time / bench's NCCL time
  // (medians of the bench rows). nccl_tests_ratio / bench_ratio = base_over_bench / new_over_bench: a library that
  // adds nothing a call keeps new_over_bench near 1 however far NCCL's own runs (base_over_bench) drift.
  double new_over_bench = 0;
  double base_over_bench = 0;
  int bench_ranks = 0;
  int bench_iters = 0;  // canopy bench's timed calls a loop (--iters) of these rows; 0: not recorded, or they differ
  std::string bench_device;
};

// The sizes `table` and `bench` (rows of canopy bench --json with NCCL timed: nccl_time_us > 0) share, for the
// table's collective, type and operator (any operator where the collective does not reduce); rows of the table's
// rank count when there are any, else all. Several bench rows of one size give the median ratio. `in_place`: the
// table's in-place ratios (for `canopy bench --in-place`), else out of place.
std::vector<NcclTestsBenchCheck> check_against_bench(const NcclTestsTable& table, const std::vector<BenchRow>& bench,
                                                     bool in_place, double tolerance = 0.05);

}  // namespace canopy
