// The test pattern's reference check on the GPU: the CUDA source of the kernels canopy_check_<dtype> (appended to the
// fill kernels' source, bench/harness/test_pattern.cpp), which compare every element of one rank's output with the
// collective's definition applied to the pattern's inputs, the same reference and tolerance as the host's
// (bench/harness/collective_check.hpp), and count what differs; and ReferenceCheckParams, their one argument.
// bench/harness/gpu_reference_check.hpp builds the arguments and reads the counts back.
#pragma once

#include <cstdint>

namespace canopy {

// What the elements of an output are made of (ReferenceCheckParams::kind).
enum class ReferenceKind : int {
  copy = 0,       // a copy of rank `from`'s input element first + j (broadcast)
  gather = 1,     // allgather: of rank e / unit's input element e % unit (e = first + j)
  reduction = 2,  // every rank's input element base + e combined with `op` (allreduce, reduce, reducescatter)
  program = 3,    // a program's: output chunk e / unit combines the (rank, input chunk) pairs its span lists
};

// The kernels' argument, passed by value: the kernel source declares the same members in the same order.
struct ReferenceCheckParams {
  const void* output = nullptr;            // elements [first, first + n) of the rank's output
  unsigned long long n = 0;
  unsigned long long first = 0;
  unsigned long long seed = 0;
  unsigned long long unit = 0;             // gather: the count; program: elements per chunk
  unsigned long long base = 0;             // reduction: the input index of output element 0 (reducescatter: rank x count)
  const int* spans = nullptr;              // program (device memory): per output chunk {first pair, pairs}, -1: free
  const int* pairs = nullptr;              // program (device memory): (rank, input chunk), flat
  const double* tolerances = nullptr;      // program (device memory): {relative, absolute} per input count
  unsigned long long* counts = nullptr;    // device memory: [0] wrong, [1] the lowest wrong element, [2] checked
  double relative = 0, absolute = 0;       // reduction: the tolerance of `ranks` inputs (reduction_tolerance)
  double roundoff = 0, division = 0, underflow = 0;  // avg's tolerance (average_tolerance): u, the division's, eta
  int kind = 0;                            // ReferenceKind
  int ranks = 0;                           // reduction: the inputs of each element
  int from = 0;                            // copy: the rank copied
  int op = 0;                              // ReduceOp (sum, prod, min, max, avg)
  int prod = 0;                            // the inputs are a product's (test_pattern.hpp's kProd)
  int reserved = 0;
};

// The kernels' source; it uses the fill kernels' mix, float_value and make (they come first in the module).
const char* reference_check_kernel_source();

}  // namespace canopy
