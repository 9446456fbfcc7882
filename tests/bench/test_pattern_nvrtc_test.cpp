// The test-pattern fill kernels compile with NVRTC against the embedded templates (label nvrtc: no GPU needed),
// one entry per dtype.
#include <gtest/gtest.h>

#include "codegen/template_bundle.hpp"
#include "runtime/jit/nvrtc_compiler.hpp"
#include "bench/harness/test_pattern.hpp"

namespace canopy {
namespace {

TEST(TestPatternNvrtc, FillKernelsCompileForEveryDtype) {
  CompileOptions o;
  o.arch = "sm_90";
  const CompiledModule m = compile_cuda(pattern_kernel_source(), template_headers(), o);
  EXPECT_FALSE(m.cubin.empty());
  for (const char* name : {"canopy_fill_f32", "canopy_fill_f16", "canopy_fill_bf16", "canopy_fill_f64",
                           "canopy_fill_i32", "canopy_fill_i64", "canopy_fill_u8", "canopy_mismatch_1", "canopy_mismatch_8"})
    EXPECT_NE(m.cubin.find(name), std::string::npos) << name;
}

}  // namespace
}  // namespace canopy
