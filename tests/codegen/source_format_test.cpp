// format_cuda_source: LLVM style with the emitter's line breaks on CUDA constructs, idempotent on generated
// kernels, comments kept whole, unbalanced code reported as Canopy's bug.
#include "codegen/source_format.hpp"

#include <gtest/gtest.h>

#include "codegen/generate.hpp"
#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"

namespace canopy {
namespace {

// Machine-generated style: everything a kernel file holds, on too few or too many lines.
const std::string kRaw = R"(// banner comment
#include "canopy/canopy.cuh"
namespace {
template <typename T,int N>
struct Config { typedef T Elem ; static constexpr int kDepth=N;  // FIFO slots
};
__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long* p){unsigned long long v;asm volatile("ld.acquire.sys.global.u64 %0, [%1];":"=l"(v):"l"(p):"memory");return v;}
__device__ const int kTable[] = {1,2,
3};
}
extern "C" __global__ void __launch_bounds__(512)
canopy_allreduce_dgx1v100_t32_c256k_f32_sum(const unsigned long long* a, int device) {
if(threadIdx.x==0) { load_acquire(a+device); }
}
)";

const std::string kFormatted = R"(// banner comment
#include "canopy/canopy.cuh"
namespace {
template <typename T, int N>
struct Config {
  typedef T Elem;
  static constexpr int kDepth = N; // FIFO slots
};
__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long *p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ const int kTable[] = {1, 2,
                                 3};
} // namespace
extern "C" __global__ void __launch_bounds__(512)
canopy_allreduce_dgx1v100_t32_c256k_f32_sum(const unsigned long long *a, int device) {
  if (threadIdx.x == 0) {
    load_acquire(a + device);
  }
}
)";

TEST(SourceFormat, LaysOutCudaInLlvmStyle) { EXPECT_EQ(format_cuda_source(kRaw), kFormatted); }

TEST(SourceFormat, IsIdempotentAndDeterministic) {
  EXPECT_EQ(format_cuda_source(kFormatted), kFormatted);
  EXPECT_EQ(format_cuda_source(kRaw), format_cuda_source(kRaw));
}

TEST(SourceFormat, IsIdempotentOnGeneratedKernels) {
  for (const auto& [topology, collective] : {std::pair{"h200x2", Collective::allreduce},
                                             std::pair{"dgx1-v100", Collective::broadcast}}) {
    const KernelSource k = generate(plan(load_topology(topology), collective), CodegenOptions{});
    const std::string once = format_cuda_source(k.file.text);
    EXPECT_EQ(format_cuda_source(once), once) << k.file.name;
  }
}

TEST(SourceFormat, KeepsLongCommentsWhole) {
  const std::string comment = "int x; // " + std::string(150, 'x') + "\n";
  EXPECT_EQ(format_cuda_source(comment), comment);
}

TEST(SourceFormat, UnbalancedCodeIsAnInternalError) {
  EXPECT_THROW(format_cuda_source("__device__ void f() {\n  g(;\n}\n"), InternalError);
}

}  // namespace
}  // namespace canopy
