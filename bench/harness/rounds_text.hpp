// How `canopy bench --vs-nccl` prints its comparison (bench/harness/paired_rounds.hpp): the header lines that say how
// the rounds ran, which NCCL it is and whether NVLink SHARP (NVLS) was off, and each row's NCCL columns: its time,
// busbw, the ratio of the medians and, over several rounds, the ratio's range and its verdict against --target.
#pragma once

#include <string>

#include "bench/harness/benchmark.hpp"

namespace canopy {

// "# NCCL 2.28.9 (/path/libnccl.so.2), NVLS off (NCCL_NVLS_ENABLE=0)": every NCCL figure's context. `nvls_enable`:
// NCCL_NVLS_ENABLE's value, null where unset.
std::string nccl_context_line(const std::string& version, const std::string& path, const char* nvls_enable);
// The lines (each "# ...\n") saying how `rounds` rounds a size ran and what ratio, range and verdict mean.
std::string rounds_header(int rounds, double target);
// The NCCL columns' titles, after the row's own ("nccl(us) nccl_bus ratio", and "range vs 1.00" over rounds).
std::string nccl_column_titles(int rounds, double target);
// A row's NCCL columns (n/a where NCCL did not run).
std::string nccl_columns(const BenchRow& r, double target);

}  // namespace canopy
