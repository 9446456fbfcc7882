// The Clang parse check: clean device code using every piece of the NVRTC vocabulary passes (a header included
// from the in-memory list, the embedded templates, a generated kernel), and each kind of generator bug is reported
// with its file, line, column and source line.
#include "codegen/cuda_parse_check.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "codegen/generate.hpp"
#include "codegen/template_bundle.hpp"
#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

void expect_clean(const SourceFile& main, const std::vector<SourceFile>& headers) {
  for (const SourceDiagnostic& d : check_cuda_source(main, headers)) ADD_FAILURE() << to_string(d);
}

const SourceFile kHelper{"canopy/helper.cuh", R"(#pragma once
#if !defined(__CUDACC_RTC__) || !defined(__CUDACC__) || !CANOPY_CLANG_CHECK || __CUDA_ARCH__ != 900
#error "the check must look like NVRTC compiling device code for sm_90"
#endif
namespace canopy {
template <typename T>
__device__ __forceinline__ T twice(T x) { return 2 * x; }
__host__ __device__ inline int host_and_device(int x) { return x + 1; }
int unannotated(int x) { return x - 1; }  // device code, as under NVRTC's -default-device
}  // namespace canopy
)"};

const SourceFile kCleanKernel{"clean.cu", R"(#include "canopy/helper.cuh"
using namespace canopy;
__device__ __noinline__ unsigned long long spin(const unsigned long long* __restrict__ p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  if (v == ~0ull) __trap();
  return v;
}
__device__ __forceinline__ float half_to_float(unsigned short bits) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
  return f;
}
__device__ __forceinline__ uint4 load_v4(const void* p) {
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ double add(double a, double b) {
  double r;
  asm("add.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b));
  return r;
}
template <int kThreads>
__global__ void __launch_bounds__(kThreads, 2) templated(unsigned int* out) { out[threadIdx.x] = kThreads; }
extern "C" __global__ void __launch_bounds__(512) canopy_test_kernel(unsigned long long* p, const void* v) {
  __shared__ unsigned int s[32];
  const dim3 block = blockDim;
  const uint3 thread = threadIdx;
  s[thread.x % 32] = blockIdx.x + gridDim.x + block.y + blockIdx.y * blockDim.z;
  __syncthreads();
  const long long start = clock64();
  const uint4 w = load_v4(v);
  const uint4 z = make_uint4(w.x, w.y, w.z, w.w);
  p[threadIdx.x] = twice(spin(p)) + static_cast<unsigned long long>(start) + z.x + host_and_device(1) +
                   unannotated(2) + static_cast<unsigned long long>(half_to_float(1) + add(1, 2));
}
)"};

TEST(CudaParseCheck, CleanKernelUsingTheWholeVocabularyPasses) { expect_clean(kCleanKernel, {kHelper}); }

TEST(CudaParseCheck, EveryTemplateParsesOnItsOwn) {
  for (const SourceFile& h : template_headers())
    expect_clean({"only.cu", "#include \"" + h.name + "\"\n"}, template_headers());
}

TEST(CudaParseCheck, GeneratedKernelsAreClean) {
  const KernelSource k = generate(plan(load_topology("h200x2"), Collective::allreduce), CodegenOptions{});
  expect_clean(k.file, template_headers());
}

TEST(CudaParseCheck, ReportsASyntaxErrorWithLineAndColumn) {
  const auto d = check_cuda_source({"syntax.cu", "extern \"C\" __global__ void k() {\n  int x = ;\n}\n"}, {});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].file, "syntax.cu");
  EXPECT_EQ(d[0].line, 2);
  EXPECT_EQ(d[0].column, 11);
  EXPECT_EQ(d[0].severity, "error");
  EXPECT_EQ(d[0].message, "expected expression");
  EXPECT_EQ(d[0].source_line, "  int x = ;");
  EXPECT_EQ(to_string(d[0]), "syntax.cu:2:11: error: expected expression\n    int x = ;");
}

TEST(CudaParseCheck, NamesTheHeaderAnErrorIsIn) {
  const SourceFile bad{"canopy/bad.cuh", "#pragma once\n__device__ int f() { return 1 + not_declared; }\n"};
  const auto d = check_cuda_source({"uses.cu", "#include \"canopy/bad.cuh\"\n"}, {bad});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].file, "canopy/bad.cuh");
  EXPECT_EQ(d[0].line, 2);
  EXPECT_EQ(d[0].column, 33);
  EXPECT_EQ(d[0].message, "use of undeclared identifier 'not_declared'");
  EXPECT_EQ(d[0].source_line, "__device__ int f() { return 1 + not_declared; }");
}

TEST(CudaParseCheck, ReadsHeadersOnlyFromMemory) {
  const auto d = check_cuda_source({"disk.cu", "#include \"core/error.hpp\"\n#include <stdint.h>\n"}, {});
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].line, 1);
  EXPECT_THAT(d[0].message, HasSubstr("'core/error.hpp' file not found"));
}

TEST(CudaParseCheck, ReportsAnUnknownAsmConstraint) {
  const auto d = check_cuda_source(
      {"asm.cu", "__device__ float f(float x) {\n  asm volatile(\"mov.b32 %0, %0;\" : \"+z\"(x));\n  return x;\n}\n"},
      {});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].line, 2);
  EXPECT_EQ(d[0].column, 36);
  EXPECT_EQ(d[0].severity, "error");
  EXPECT_THAT(d[0].message, HasSubstr("invalid output constraint '+z'"));
}

TEST(CudaParseCheck, HoldsAsmOperandsToNvrtcRules) {
  const SourceFile main{"operands.cu", R"(__device__ unsigned int f(unsigned long long* p, unsigned short h, float g) {
  unsigned int r;
  asm("mov.b32 %0, %1;" : "=r"(r) : "r"(p));
  asm("mov.b32 %0, %1;" : "=r"(r) : "r"(h));
  asm("mov.b32 %0, %1;" : "=r"(r) : "f"(r));
  asm("mov.b32 %0, %1;" : "=r"(r) : "rn"(1));
  asm("mov.b32 %0, %1;" : "=r"(r) : "0"(r));
  asm("mov.b32 %0, %1;" : "=r"(r) : "r"(g));
  return r;
}
template <typename T>
__device__ T id(T x) {
  T y;
  asm("mov.b32 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}
__device__ double use() { return id(1) + id(2.0); }
)"};
  const auto d = check_cuda_source(main, {});
  ASSERT_EQ(d.size(), 8u);
  const int lines[] = {3, 4, 5, 6, 7, 8, 14, 14};
  const int columns[] = {37, 37, 37, 37, 37, 37, 27, 37};
  for (std::size_t i = 0; i < d.size(); ++i) {
    EXPECT_EQ(d[i].line, lines[i]) << to_string(d[i]);
    EXPECT_EQ(d[i].column, columns[i]) << to_string(d[i]);
    EXPECT_EQ(d[i].severity, "error");
  }
  EXPECT_EQ(d[0].message, "asm operand of type 'unsigned long long *' (8 bytes) does not match constraint 'r' (a "
                          "32-bit integer); NVRTC rejects it");
  EXPECT_THAT(d[1].message, HasSubstr("'unsigned short' (2 bytes)"));
  EXPECT_THAT(d[2].message, HasSubstr("constraint 'f' (a float)"));
  EXPECT_THAT(d[3].message, HasSubstr("'rn' is not a single letter"));
  EXPECT_THAT(d[4].message, HasSubstr("'0' is not a single letter"));
  EXPECT_THAT(d[5].message, HasSubstr("'float' (4 bytes) does not match constraint 'r'"));
  EXPECT_THAT(d[6].message, HasSubstr("'double' (8 bytes)"));
  ASSERT_EQ(d[6].notes.size(), 1u);
  EXPECT_THAT(d[6].notes[0], HasSubstr("operands.cu:17:"));
  EXPECT_THAT(d[6].notes[0], HasSubstr("in instantiation of"));
}

TEST(CudaParseCheck, ReportsATypeMismatch) {
  const auto d = check_cuda_source(
      {"types.cu", "__device__ void f(unsigned long long* p) {\n  float* q = p;\n  *q = 1;\n}\n"}, {});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].line, 2);
  EXPECT_EQ(d[0].column, 10);
  EXPECT_THAT(d[0].message, HasSubstr("cannot initialize a variable of type 'float *'"));
}

TEST(CudaParseCheck, ReportsUnusedVariablesAsWarnings) {
  const auto d = check_cuda_source({"unused.cu", "__device__ void f() {\n  int unused_thing = 3;\n}\n"}, {});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].severity, "warning");
  EXPECT_EQ(d[0].line, 2);
  EXPECT_EQ(d[0].column, 7);
  EXPECT_EQ(d[0].message, "unused variable 'unused_thing' [-Wunused-variable]");
  EXPECT_THAT(to_string(d[0]), HasSubstr("unused.cu:2:7: warning: unused variable"));
}

TEST(CudaParseCheck, AnArchitectureClangDoesNotKnowIsAnError) {
  EXPECT_THROW(check_cuda_source({"k.cu", "\n"}, {}, "sm_1"), Error);
}

}  // namespace
}  // namespace canopy
