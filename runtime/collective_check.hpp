// check_output: compares one rank's output of a collective, copied to the host, element by element with the
// collective's definition applied to the test pattern's inputs (runtime/test_pattern.hpp), computed here on the
// host in double precision. Integers and min/max must match exactly; float sums and products within a
// tolerance derived from the reduction depth: ((ranks + 1) x the type's unit roundoff + (ranks - 1) x 2^-53, the
// double-precision reference's own rounding) x sum of |inputs| (products: x |result|).
// NaN never passes. Runs on several threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "planner/collective.hpp"

namespace canopy {

struct CheckSpec {
  Collective collective = Collective::allreduce;
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  int ranks = 1;
  std::uint64_t count = 0;  // NCCL's count (see CollectiveCall)
  std::uint64_t seed = 0;
};

struct CheckResult {
  std::uint64_t checked = 0;
  std::uint64_t wrong = 0;
  std::vector<std::string> examples;  // the first few wrong elements, "rank 1 element 17: got 3, expected 2.5"
};

// Elements of rank `rank`'s output that the collective defines (0 for reduce's non-root ranks).
std::uint64_t output_elements(const CheckSpec& spec, int rank);

// `output` holds output_elements(spec, rank) elements of spec.dtype.
CheckResult check_output(const CheckSpec& spec, int rank, const void* output, unsigned threads = 0);

// Elements [first, first + elements) of the outputs of `ranks` at once (outputs[k] holds rank ranks[k]'s part):
// where every rank's output is the same (broadcast, allreduce, allgather) the reference is computed once.
CheckResult check_outputs_part(const CheckSpec& spec, const std::vector<int>& ranks,
                               const std::vector<const void*>& outputs, std::uint64_t first, std::uint64_t elements,
                               unsigned threads = 0);

// The expected value of output element j of `rank`, and the tolerance it is held to; integer types also as an
// exact integer (doubles lose the low bits of large i64 sums).
double expected_value(const CheckSpec& spec, int rank, std::uint64_t j, double* tolerance = nullptr,
                      std::int64_t* exact = nullptr);

}  // namespace canopy
