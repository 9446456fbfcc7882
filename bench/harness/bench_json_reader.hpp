// read_bench_rows_json: the rows `canopy bench --json` writes (bench_rows_json in benchmark.cpp; docs/runtime.md "Bench
// JSON") -> BenchRow values, for tools that compare them with other measurements (canopy nccl-tests-compare).
// Throws canopy::Error naming the source, the row and the field at fault.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bench/harness/benchmark.hpp"

namespace canopy {

std::vector<BenchRow> read_bench_rows_json(std::string_view text, const std::string& source);

}  // namespace canopy
