// ShareableMemory on a GPU (label gpu; SKIPPED without one): memory made with cuMemCreate, exported as a POSIX file
// descriptor and imported again maps the same bytes at another address; sizes round up to the granularity; a bad
// descriptor is refused with a Status, not a crash.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <numeric>
#include <vector>

#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/cuda/shareable_memory.hpp"

namespace canopy {
namespace {

TEST(ShareableMemoryOnGpu, AnExportedDescriptorMapsTheSameBytes) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const int peers[] = {0};
  std::unique_ptr<ShareableMemory> owner;
  const Status made = ShareableMemory::create(0, 3000, peers, &owner);
  ASSERT_TRUE(made.ok()) << made.message();
  ASSERT_GE(owner->bytes(), 3000u);
  std::vector<unsigned char> written(owner->bytes());
  std::iota(written.begin(), written.end(), static_cast<unsigned char>(7));
  ASSERT_EQ(cudaMemcpy(owner->pointer(), written.data(), written.size(), cudaMemcpyHostToDevice), cudaSuccess);
  int fd = -1;
  const Status exported = owner->export_fd(&fd);
  ASSERT_TRUE(exported.ok()) << exported.message();
  std::unique_ptr<ShareableMemory> mapped;
  const Status imported = ShareableMemory::import(fd, 0, owner->bytes(), peers, &mapped);
  ::close(fd);
  ASSERT_TRUE(imported.ok()) << imported.message();
  EXPECT_NE(mapped->pointer(), owner->pointer());
  std::vector<unsigned char> read(owner->bytes());
  ASSERT_EQ(cudaMemcpy(read.data(), mapped->pointer(), read.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(read, written);
  // A write through the mapping is seen through the owner's address.
  ASSERT_EQ(cudaMemset(mapped->pointer(), 0xAB, 16), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(read.data(), owner->pointer(), 16, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(read[0], 0xAB);
  EXPECT_EQ(read[15], 0xAB);
}

TEST(ShareableMemoryOnGpu, ABadDescriptorIsRefused) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const int peers[] = {0};
  std::unique_ptr<ShareableMemory> mapped;
  const Status s = ShareableMemory::import(-1, 0, 2 << 20, peers, &mapped);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cuMemImportFromShareableHandle"), std::string::npos) << s.message();
  EXPECT_EQ(mapped, nullptr);
}

}  // namespace
}  // namespace canopy
