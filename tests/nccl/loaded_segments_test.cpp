// LoadedSegments: which loaded object a return address lies in, by its PT_LOAD segments
// (nccl/real/loaded_segments.hpp).
#include "nccl/real/loaded_segments.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

namespace canopy::nccl_api {
namespace {

void* libc_function() { return reinterpret_cast<void*>(&std::fputs); }
void* libm_function() { return reinterpret_cast<void*>(static_cast<double (*)(double)>(&std::cos)); }

TEST(LoadedSegments, HoldTheirObjectsFunctionsAndNoOtherObjects) {
  const LoadedSegments libc = LoadedSegments::of_object_holding(libc_function());
  ASSERT_FALSE(libc.empty());
  EXPECT_TRUE(libc.contains(libc_function()));
  EXPECT_TRUE(libc.contains(reinterpret_cast<void*>(&std::snprintf)));
  // This test's own code, its stack and libm are elsewhere.
  EXPECT_FALSE(libc.contains(reinterpret_cast<void*>(&libc_function)));
  int on_stack = 0;
  EXPECT_FALSE(libc.contains(&on_stack));
  EXPECT_FALSE(libc.contains(libm_function()));
  EXPECT_FALSE(libc.contains(nullptr));
}

TEST(LoadedSegments, AgreeWithDladdrOnEveryObjectAsked) {
  const void* addresses[] = {libc_function(), libm_function(), reinterpret_cast<void*>(&libc_function)};
  for (const void* a : addresses) {
    Dl_info info{};
    ASSERT_NE(dladdr(a, &info), 0);
    const LoadedSegments segments = LoadedSegments::of_object_holding(a);
    for (const void* b : addresses) {
      Dl_info other{};
      ASSERT_NE(dladdr(b, &other), 0);
      EXPECT_EQ(segments.contains(b), other.dli_fbase == info.dli_fbase) << info.dli_fname << " / " << other.dli_fname;
    }
  }
}

TEST(LoadedSegments, NoObjectHoldsNullOrTheStack) {
  EXPECT_TRUE(LoadedSegments::of_object_holding(nullptr).empty());
  int on_stack = 0;
  EXPECT_TRUE(LoadedSegments::of_object_holding(&on_stack).empty());
}

}  // namespace
}  // namespace canopy::nccl_api
