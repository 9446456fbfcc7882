// The test-pattern fill kernels and the reference check kernels compile with NVRTC against the embedded templates
// (label nvrtc: no GPU needed), one entry of each per dtype.
#include <gtest/gtest.h>

#include "codegen/template_bundle.hpp"
#include "runtime/jit/nvrtc_compiler.hpp"
#include "bench/harness/test_pattern.hpp"

namespace canopy {
namespace {

TEST(TestPatternNvrtc, FillAndCheckKernelsCompileForEveryDtype) {
  CompileOptions o;
  o.arch = "sm_90";
  const CompiledModule m = compile_cuda(pattern_kernel_source(), template_headers(), o);
  EXPECT_FALSE(m.cubin.empty());
  for (DataType t : kEveryDataType) {
    for (const char* kind : {"canopy_fill_", "canopy_check_"}) {
      const std::string name = kind + to_string(t);
      EXPECT_NE(m.cubin.find(name), std::string::npos) << name;
    }
  }
  for (const char* name : {"canopy_mismatch_1", "canopy_mismatch_8"})
    EXPECT_NE(m.cubin.find(name), std::string::npos) << name;
}

}  // namespace
}  // namespace canopy
