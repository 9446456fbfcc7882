// emit_cuda: Schedule -> KernelSource. The only code that knows CUDA syntax: one translation unit that includes
// "canopy/canopy.cuh" and sequences its primitives, with every peer, offset, counter, weight, chunk size, dtype
// and op a compile-time constant; one __global__ entry per device whose blocks each run one lane. Iteration is in
// sorted order, so the text is a pure function of the schedule (byte-identical runs). Not yet formatted: see
// codegen/generate.hpp.
#pragma once

#include "codegen/kernel_source.hpp"
#include "codegen/schedule.hpp"

namespace canopy {

KernelSource emit_cuda(const Schedule& schedule);

// canopy_<collective>_<topology>_t<trees>_c<chunk>_<dtype>[_<op>], e.g. canopy_allreduce_dgx1v100_t32_c256k_f32_sum.
std::string kernel_base_name(const Schedule& schedule);

}  // namespace canopy
