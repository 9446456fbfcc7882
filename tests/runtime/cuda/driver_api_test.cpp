// The driver entry points fetched at run time (runtime/cuda/driver_api.hpp): with no driver, a launch through the
// driver answers "not there" (the runtime then launches), so do the stream queries (the runtime then answers), and a
// CUresult is still put in words; with one, the words are the driver's own. Every collective's launch on a GPU goes
// through driver_launch (tests/gpu/).
#include <gtest/gtest.h>

#include <cuda.h>

#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {
namespace {

TEST(DriverApi, ALaunchWithoutADriverIsNotThere) {
  if (visible_gpu_count() > 0) GTEST_SKIP() << "a GPU is visible: every GPU test's collectives launch through it";
  void* params[] = {nullptr};
  EXPECT_FALSE(driver_launch(nullptr, 1, 32, nullptr, false, params).has_value());
  EXPECT_EQ(driver_error_text(CUDA_ERROR_INVALID_VALUE), "CUresult 1");
}

TEST(DriverApi, StreamQueriesWithoutADriverAreNotThere) {
  if (visible_gpu_count() > 0) GTEST_SKIP() << "a GPU is visible: tests/gpu/driver_queries_gpu_test.cpp asks it";
  EXPECT_FALSE(driver_stream_capturing(nullptr).has_value());  // the oracle then asks the runtime
  EXPECT_FALSE(driver_stream_id(nullptr).has_value());
  unsigned long long id = 0;
  EXPECT_NE(stream_id(nullptr, &id), cudaSuccess);  // the runtime's answer: no driver
  (void)cudaGetLastError();
}

TEST(DriverApi, ResultsInTheDriversWords) {
  if (visible_gpu_count() == 0) GTEST_SKIP() << "no GPU driver: the words are the number alone (the test above)";
  EXPECT_EQ(driver_error_text(CUDA_ERROR_INVALID_VALUE).rfind("CUDA_ERROR_INVALID_VALUE (", 0), 0u)
      << driver_error_text(CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(driver_error_text(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE).rfind("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
                                                                            0),
            0u);
}

}  // namespace
}  // namespace canopy
