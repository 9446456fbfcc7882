// NvmlLibrary without NVML: loading fails with a reason that names the library, never a crash (label cpu; the
// real library is exercised by tests/gpu/detect_gpu_test.cpp on a GPU machine).
#include "runtime/cuda/nvml_library.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace canopy {
namespace {

using ::testing::HasSubstr;

TEST(NvmlLibrary, AMissingLibraryIsNulloptWithAReason) {
  std::string why_not;
  const auto nvml = NvmlLibrary::load(&why_not, "libnvidia-ml-absent-for-canopy-tests.so.1");
  EXPECT_FALSE(nvml);
  EXPECT_THAT(why_not, HasSubstr("libnvidia-ml-absent-for-canopy-tests.so.1 not found: no NVIDIA driver"));
  EXPECT_FALSE(NvmlLibrary::load(nullptr, "libnvidia-ml-absent-for-canopy-tests.so.1"));
}

TEST(NvmlLibrary, ALibraryWithoutNvmlSymbolsIsRefused) {
  std::string why_not;
  EXPECT_FALSE(NvmlLibrary::load(&why_not, "libm.so.6"));
  EXPECT_THAT(why_not, HasSubstr("libm.so.6 lacks nvmlInit_v2: the NVIDIA driver is too old"));
}

}  // namespace
}  // namespace canopy
