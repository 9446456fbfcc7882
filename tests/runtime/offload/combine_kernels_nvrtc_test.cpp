// The hybrid reduce's combining kernels (runtime/offload/combine_kernels.hpp) compile with NVRTC against the embedded
// templates (label nvrtc: no GPU needed), one entry per dtype and op, and avg's divide and PreMulSum's scale
// per dtype.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "codegen/template_bundle.hpp"
#include "runtime/offload/combine_kernels.hpp"
#include "runtime/jit/nvrtc_compiler.hpp"

namespace canopy {
namespace {

TEST(CombineKernelsNvrtc, EveryDtypeAndOpCompiles) {
  CompileOptions o;
  o.arch = "sm_90";
  const CompiledModule m = compile_cuda(combine_kernel_source(), template_headers(), o);
  EXPECT_FALSE(m.cubin.empty());
  int found = 0;
  for (const char* dtype : {"f32", "f16", "bf16", "f64", "i32", "i64", "u8"}) {
    for (const char* op : {"sum", "prod", "min", "max"}) {
      const std::string name = fmt::format("canopy_combine_{}_{}", dtype, op);
      EXPECT_NE(m.cubin.find(name), std::string::npos) << name;
      ++found;
    }
    const std::string divide = fmt::format("canopy_divide_{}", dtype);
    EXPECT_NE(m.cubin.find(divide), std::string::npos) << divide;
    const std::string scale = fmt::format("canopy_scale_{}", dtype);
    EXPECT_NE(m.cubin.find(scale), std::string::npos) << scale;
  }
  EXPECT_EQ(found, 28);
}

}  // namespace
}  // namespace canopy
