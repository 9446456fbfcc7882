// compile_cuda against NVRTC (no GPU): errors name the file and line, in the source or an in-memory header, and
// the architecture; architectures NVRTC cannot build CUBIN for are refused with the supported list; ptxas's
// statistics match kernels with known shared memory, stack and spills.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "runtime/jit/nvrtc_compiler.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

std::string error_of(const SourceFile& source, const std::vector<SourceFile>& headers, const CompileOptions& o) {
  try {
    compile_cuda(source, headers, o);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << source.name << " compiled";
  return "";
}

TEST(NvrtcCompiler, AnErrorInAnInMemoryHeaderNamesTheHeaderAndLine) {
  const std::vector<SourceFile> headers = {
      {"canopy/bad.cuh", "#pragma once\nnamespace canopy {\n__device__ int f() { return undeclared_x; }\n}\n"}};
  const SourceFile source{"uses_bad.cu", "#include \"canopy/bad.cuh\"\nextern \"C\" __global__ void k() {}\n"};
  CompileOptions o;
  o.arch = "sm_80";
  const std::string e = error_of(source, headers, o);
  EXPECT_THAT(e, HasSubstr("canopy/bad.cuh(3): error"));
  EXPECT_THAT(e, HasSubstr("undeclared_x"));
  EXPECT_THAT(e, HasSubstr("uses_bad.cu"));
  EXPECT_THAT(e, HasSubstr("sm_80"));
}

TEST(NvrtcCompiler, ArchitecturesWithoutCubinAreRefusedWithTheSupportedList) {
  const SourceFile k{"k.cu", "extern \"C\" __global__ void k() {}\n"};
  CompileOptions virtual_arch;
  virtual_arch.arch = "compute_90";
  std::string e = error_of(k, {}, virtual_arch);
  EXPECT_THAT(e, HasSubstr("'compute_90'"));
  EXPECT_THAT(e, HasSubstr("sm_90"));
  CompileOptions unknown;
  unknown.arch = "sm_1";
  e = error_of(k, {}, unknown);
  EXPECT_THAT(e, HasSubstr("sm_1"));
  EXPECT_THAT(e, HasSubstr("supported: "));
  EXPECT_THAT(e, HasSubstr("sm_90"));
  CompileOptions bad_option;
  bad_option.extra_options = {"--no-such-option"};
  EXPECT_THAT(error_of(k, {}, bad_option), HasSubstr("--no-such-option"));
}

TEST(NvrtcCompiler, StatisticsMatchAKernelWithKnownStackAndSpills) {
  // 64 live floats under a 24-register cap: ptxas must spill, and the array lives in the stack frame.
  const SourceFile k{"spills.cu", R"(extern "C" __global__ void spills(float* p, int n) {
  float a[64];
#pragma unroll
  for (int i = 0; i < 64; i++) a[i] = p[i * n + threadIdx.x];
  float s = 0;
  for (int j = 0; j < n; j++) {
#pragma unroll
    for (int i = 0; i < 64; i++) s += a[i] * a[(i + j) & 63] * p[i + j];
  }
#pragma unroll
  for (int i = 0; i < 64; i++) p[i] = a[i] + s;
}
extern "C" __global__ void shared_only(float* p) {
  __shared__ double s[256];
  s[threadIdx.x] = p[threadIdx.x];
  __syncthreads();
  p[threadIdx.x] = s[255 - threadIdx.x];
}
)"};
  CompileOptions o;
  o.extra_options = {"--maxrregcount=24"};
  const CompiledModule m = compile_cuda(k, {}, o);
  const KernelStats* spills = nullptr;
  const KernelStats* shared = nullptr;
  for (const KernelStats& s : m.kernels) {
    if (s.name == "spills") spills = &s;
    if (s.name == "shared_only") shared = &s;
  }
  ASSERT_TRUE(spills && shared) << m.log;
  EXPECT_LE(spills->registers, 24) << m.log;
  EXPECT_GT(spills->spill_store_bytes, 0) << m.log;
  EXPECT_GT(spills->spill_load_bytes, 0) << m.log;
  EXPECT_GE(spills->stack_bytes, spills->spill_store_bytes > 0 ? 4 : 0) << m.log;
  EXPECT_EQ(spills->shared_bytes, 0) << m.log;
  EXPECT_EQ(shared->shared_bytes, 256 * 8) << m.log;
  EXPECT_EQ(shared->spill_store_bytes, 0) << m.log;
  EXPECT_EQ(shared->stack_bytes, 0) << m.log;
  EXPECT_GT(m.compile_ms, 0);
  EXPECT_TRUE(m.ptx.empty()) << "PTX is returned only with keep_ptx";
  EXPECT_EQ(m.cubin.substr(0, 4), "\x7f" "ELF");
}

TEST(NvrtcCompiler, VersionIsMajorDotMinor) {
  const std::string v = nvrtc_version();
  EXPECT_THAT(v, ::testing::MatchesRegex("[0-9]+\\.[0-9]+"));
  EXPECT_EQ(v.substr(0, 3), "13.");
}

}  // namespace
}  // namespace canopy
