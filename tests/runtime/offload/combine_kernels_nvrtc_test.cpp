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

// sm_90 uses the cvt instructions for fp8, sm_80 the integer conversions (templates/fp8.cuh): both compile.
TEST(CombineKernelsNvrtc, EveryDtypeAndOpCompiles) {
  for (const char* arch : {"sm_90", "sm_80"}) {
    CompileOptions o;
    o.arch = arch;
    const CompiledModule m = compile_cuda(combine_kernel_source(), template_headers(), o);
    EXPECT_FALSE(m.cubin.empty()) << arch;
    int found = 0;
    for (DataType t : kEveryDataType) {
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
        const std::string name = fmt::format("canopy_combine_{}_{}", to_string(t), to_string(op));
        EXPECT_NE(m.cubin.find(name), std::string::npos) << name << " " << arch;
        ++found;
      }
      const std::string divide = fmt::format("canopy_divide_{}", to_string(t));
      EXPECT_NE(m.cubin.find(divide), std::string::npos) << divide << " " << arch;
      const std::string scale = fmt::format("canopy_scale_{}", to_string(t));
      EXPECT_NE(m.cubin.find(scale), std::string::npos) << scale << " " << arch;
    }
    EXPECT_EQ(found, 4 * kDataTypeCount);
  }
}

}  // namespace
}  // namespace canopy
