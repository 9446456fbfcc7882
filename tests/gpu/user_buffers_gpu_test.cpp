// UserBuffers with the real driver (label gpu; SKIPPED without one): what the caches rely on holds. A pointer inside a
// cudaMalloc allocation is found with its allocation's base, size and buffer ID; a free and a new allocation at the
// same address has another buffer ID and gets a new handle; host memory is refused with a Status; memory from
// cuMemCreate crosses as a descriptor.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/cuda/shareable_memory.hpp"
#include "runtime/transport/ipc/user_buffers.hpp"

namespace canopy {
namespace {

TEST(UserBuffersOnGpu, TheDriverNamesTheAllocationAndANewOneAtTheSameAddressIsAnother) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  BufferExports exports(cuda_buffer_driver());
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 8 << 20), cudaSuccess);
  SharedBuffer first;
  const Status s = exports.share(static_cast<char*>(p) + 4096, 1 << 20, &first);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(first.allocation.base, reinterpret_cast<std::uintptr_t>(p));
  EXPECT_GE(first.allocation.size, std::size_t{8} << 20);
  EXPECT_EQ(first.offset, 4096u);
  EXPECT_NE(first.allocation.id, 0u);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
  // The allocator often hands the same address out again; whether or not it does, the allocation is another one.
  void* q = nullptr;
  ASSERT_EQ(cudaMalloc(&q, 8 << 20), cudaSuccess);
  SharedBuffer second;
  ASSERT_TRUE(exports.share(q, 4096, &second).ok());
  EXPECT_NE(second.allocation.id, first.allocation.id);
  if (q == p) {
    EXPECT_NE(second.handle, first.handle);
  }
  std::vector<char> host(4096);
  SharedBuffer none;
  EXPECT_FALSE(exports.share(host.data(), host.size(), &none).ok());
  ASSERT_EQ(cudaFree(q), cudaSuccess);
}

// Memory from cuMemCreate with POSIX descriptors (as ncclMemAlloc makes it): found by its mapping, exported as a
// descriptor the first time only, and a mapping of that descriptor writes the same memory.
TEST(UserBuffersOnGpu, MemoryFromCuMemCreateIsFoundByItsMappingAndCrossesAsADescriptor) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::unique_ptr<ShareableMemory> memory;
  const Status made = ShareableMemory::create(0, 8 << 20, {}, &memory);
  if (made.code() == StatusCode::unsupported) GTEST_SKIP() << made.message();
  ASSERT_TRUE(made.ok()) << made.message();
  char* p = static_cast<char*>(memory->pointer());
  BufferExports exports(cuda_buffer_driver());
  SharedBuffer s;
  UniqueFd fd;
  const Status shared = exports.share(p + 4096, 1 << 20, &s, &fd);
  ASSERT_TRUE(shared.ok()) << shared.message();
  EXPECT_TRUE(s.allocation.by_fd);
  EXPECT_EQ(s.allocation.base, reinterpret_cast<std::uintptr_t>(p));
  EXPECT_GE(s.allocation.size, std::size_t{8} << 20);
  EXPECT_EQ(s.offset, 4096u);
  EXPECT_EQ(s.fd_follows, 1u);
  ASSERT_GE(fd.get(), 0);
  BufferImports imports(cuda_buffer_driver());
  void* q = nullptr;
  const Status mapped = imports.map(1, s, &q, [&](UniqueFd* out) {
    *out = std::move(fd);
    return Status();
  });
  ASSERT_TRUE(mapped.ok()) << mapped.message();
  ASSERT_EQ(cudaMemset(q, 7, 4096), cudaSuccess);
  std::vector<char> back(4096);
  ASSERT_EQ(cudaMemcpy(back.data(), p + 4096, back.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::count(back.begin(), back.end(), 7), 4096);
  SharedBuffer again;
  ASSERT_TRUE(exports.share(p, 4096, &again, &fd).ok());
  EXPECT_EQ(again.fd_follows, 0u);
  EXPECT_EQ(fd.get(), -1);
}

}  // namespace
}  // namespace canopy
