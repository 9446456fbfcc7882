// check_output: compares one rank's output of a collective, copied to the host, element by element with the
// collective's definition applied to the test pattern's inputs (bench/harness/test_pattern.hpp), computed here on the
// host in double precision. Integers and min/max must match exactly; float sums and products within a
// tolerance derived from the reduction depth: ((ranks + 1) x the type's unit roundoff + (ranks - 1) x 2^-53, the
// double-precision reference's own rounding) x sum of |inputs| (products: x |result|).
// NaN never passes. Runs on several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "dsl/algorithm.hpp"
#include "core/collective.hpp"

namespace canopy {

// What a collective-algorithm program's outputs hold, from the checker's symbolic execution (which proved it is
// what the program's goal promises): its calls are checked against it.
struct ProgramOutputs {
  explicit ProgramOutputs(algo::Program program);
  algo::Program program;
  // [rank][output chunk]: the (rank, input chunk) pairs combined into it, a pair once per time it is; nullopt where
  // the goal leaves the chunk free (it is not checked).
  std::vector<std::vector<std::optional<std::vector<std::pair<int, int>>>>> sources;
};

struct CheckSpec {
  Collective collective = Collective::allreduce;
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  int ranks = 1;
  std::uint64_t count = 0;  // NCCL's count (see CollectiveCall)
  std::uint64_t seed = 0;
  std::shared_ptr<const ProgramOutputs> program = nullptr;  // set: a program's call (collective and root ignored)
};

// Whether the inputs of `spec` are combined with spec.op (a reducing collective or program).
bool combines(const CheckSpec& spec);
// Elements of rank `rank`'s input (send buffer) for `spec`.
std::uint64_t input_elements(const CheckSpec& spec, int rank);

struct CheckResult {
  std::uint64_t checked = 0;
  std::uint64_t wrong = 0;
  std::vector<std::string> examples;  // the first few wrong elements, "rank 1 element 17: got 3, expected 2.5"
};

// Elements of rank `rank`'s output that the collective defines (0 for reduce's non-root ranks).
std::uint64_t output_elements(const CheckSpec& spec, int rank);

// Whether every rank's output must hold the same bits, so that one rank checked against the reference and the others
// compared with it bit for bit check them all: broadcast, allreduce and allgather; a program whose every rank's output
// chunks combine the same inputs (none left free) where combining is exact (copies, integers, min and max; a float
// sum's bits depend on each rank's order).
bool same_output_on_every_rank(const CheckSpec& spec);

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
