// ShareableMemory without a GPU driver (label cpu; SKIPPED where a GPU is visible, since there it would succeed):
// creating memory to share between processes answers with a Status that says what is missing, never crashes.
#include <gtest/gtest.h>

#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/cuda/shareable_memory.hpp"

namespace canopy {
namespace {

TEST(ShareableMemory, WithoutADriverSaysWhatIsMissing) {
  if (visible_gpu_count() > 0) GTEST_SKIP() << "a GPU is visible: tests/gpu/shareable_memory_gpu_test.cpp covers it";
  const int peers[] = {0};
  std::unique_ptr<ShareableMemory> m;
  const Status s = ShareableMemory::create(0, 4096, peers, &m);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.code() == StatusCode::unsupported || s.code() == StatusCode::cuda_error) << s.message();
  EXPECT_FALSE(s.message().empty());
  EXPECT_EQ(m, nullptr);
  const Status imported = ShareableMemory::import(3, 0, 4096, peers, &m);
  EXPECT_FALSE(imported.ok());
  EXPECT_EQ(m, nullptr);
}

}  // namespace
}  // namespace canopy
