// The stream queries every call makes, asked of the driver (runtime/cuda/driver_api.hpp; label gpu, SKIPPED without a
// GPU): the same answers as the runtime's cudaStreamGetId and cudaStreamIsCapturing, for a stream of the caller's, the
// per-thread and the legacy default streams and the null stream, before, during and after a capture.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <optional>

#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {
namespace {

unsigned long long runtime_id(cudaStream_t s) {
  unsigned long long id = 0;
  EXPECT_EQ(cudaStreamGetId(s, &id), cudaSuccess);
  return id;
}

bool runtime_capturing(cudaStream_t s) {
  cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
  EXPECT_EQ(cudaStreamIsCapturing(s, &c), cudaSuccess);
  return c != cudaStreamCaptureStatusNone;
}

TEST(DriverQueriesOnGpu, StreamIdsAndCapturesAsTheRuntimeSaysThem) {
  if (visible_gpu_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStream_t mine = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking), cudaSuccess);
  for (cudaStream_t s : {mine, cudaStreamPerThread, cudaStreamLegacy, static_cast<cudaStream_t>(nullptr)}) {
    const std::optional<unsigned long long> id = driver_stream_id(s);
    ASSERT_TRUE(id.has_value()) << "stream " << s;
    EXPECT_EQ(*id, runtime_id(s)) << "stream " << s;
    const std::optional<bool> capturing = driver_stream_capturing(s);
    ASSERT_TRUE(capturing.has_value()) << "stream " << s;
    EXPECT_FALSE(*capturing);
    EXPECT_EQ(*capturing, runtime_capturing(s));
  }
  ASSERT_EQ(cudaStreamBeginCapture(mine, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const std::optional<bool> during = driver_stream_capturing(mine);
  const bool runtime_during = runtime_capturing(mine);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(mine, &graph), cudaSuccess);
  ASSERT_TRUE(during.has_value());
  EXPECT_TRUE(*during);
  EXPECT_TRUE(runtime_during);
  EXPECT_EQ(driver_stream_capturing(mine), std::optional<bool>(false));
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(mine), cudaSuccess);
}

}  // namespace
}  // namespace canopy
