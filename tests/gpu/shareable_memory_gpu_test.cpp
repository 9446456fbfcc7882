// ShareableMemory on a GPU (label gpu; SKIPPED without one): memory made with cuMemCreate, exported as a POSIX file
// descriptor and imported again maps the same bytes at another address, in this process and in another one sharing
// the GPU (the descriptor crossing through FdChannel); sizes round up to the granularity; a bad descriptor, or a size
// beyond the allocation behind a good one, is refused with a Status, not a crash.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <numeric>
#include <vector>

#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/cuda/shareable_memory.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"

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

// The size an importer maps comes from the owner's message: the driver refuses one beyond the allocation behind the
// descriptor, and that is a Status saying so, never a mapping that faults past its end.
TEST(ShareableMemoryOnGpu, ImportingMoreThanTheAllocationIsAnError) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const int peers[] = {0};
  std::unique_ptr<ShareableMemory> owner;
  ASSERT_TRUE(ShareableMemory::create(0, 3000, peers, &owner).ok());
  int fd = -1;
  ASSERT_TRUE(owner->export_fd(&fd).ok());
  std::unique_ptr<ShareableMemory> mapped;
  const Status s = ShareableMemory::import(fd, 0, 2 * owner->bytes(), peers, &mapped);
  ::close(fd);
  EXPECT_EQ(s.code(), StatusCode::remote_error) << s.message();
  EXPECT_NE(s.message().find("smaller than the size it announced"), std::string::npos) << s.message();
  EXPECT_EQ(mapped, nullptr);
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

// How many GPUs a child process sees: this process must not start CUDA before it forks the ranks (ctest runs each
// test in a process of its own; run alone with --gtest_filter otherwise).
int gpus_seen_by_a_child() {
  const pid_t probe = ::fork();
  if (probe == 0) ::_exit(std::min(visible_gpu_count(), 100));
  int status = 0;
  return ::waitpid(probe, &status, 0) == probe && WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

// Rank 1 (a child process): makes the memory, fills it, hands its descriptor to rank 0, then checks rank 0's write.
int owner_rank(const BootstrapSecret& secret) {
  FdChannel::Options o;
  o.timeout = std::chrono::milliseconds(30000);
  std::unique_ptr<FdChannel> channel;
  if (!FdChannel::listen(secret, 1, {::getppid(), ::getpid()}, o, &channel).ok()) return 2;
  const int peers[] = {0};
  std::unique_ptr<ShareableMemory> memory;
  if (!ShareableMemory::create(0, 1 << 20, peers, &memory).ok()) return 3;
  std::vector<unsigned char> pattern(memory->bytes());
  for (std::size_t k = 0; k < pattern.size(); ++k) pattern[k] = static_cast<unsigned char>(k * 7 + 1);
  if (cudaMemcpy(memory->pointer(), pattern.data(), pattern.size(), cudaMemcpyHostToDevice) != cudaSuccess) return 4;
  int fd = -1;
  if (!memory->export_fd(&fd).ok()) return 5;
  const int fds[] = {fd};
  const bool sent = channel->send(0, 1, fds, std::to_string(memory->bytes())).ok();
  ::close(fd);
  if (!sent) return 6;
  FdMessage done;
  if (!channel->receive(0, 2, &done).ok()) return 7;  // rank 0 has written through its mapping
  unsigned char head[16] = {};
  if (cudaMemcpy(head, memory->pointer(), sizeof head, cudaMemcpyDeviceToHost) != cudaSuccess) return 8;
  for (unsigned char b : head)
    if (b != 0xCD) return 9;
  return 0;
}

TEST(ShareableMemoryOnGpu, TwoProcessesOnOneGpuMapTheSameBytes) {
  if (gpus_seen_by_a_child() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  BootstrapSecret secret{};
  ASSERT_TRUE(random_secret(&secret).ok());
  const pid_t owner = ::fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) ::_exit(owner_rank(secret));
  FdChannel::Options o;
  o.timeout = std::chrono::milliseconds(30000);
  std::unique_ptr<FdChannel> channel;
  ASSERT_TRUE(FdChannel::listen(secret, 0, {::getpid(), owner}, o, &channel).ok());
  FdMessage m;
  const Status received = channel->receive(1, 1, &m);
  ASSERT_TRUE(received.ok()) << received.message();
  ASSERT_EQ(m.fds.size(), 1u);
  const std::size_t bytes = std::stoull(m.payload);
  const int peers[] = {0};
  std::unique_ptr<ShareableMemory> mapped;
  const Status imported = ShareableMemory::import(m.fds[0].get(), 0, bytes, peers, &mapped);
  ASSERT_TRUE(imported.ok()) << imported.message();
  std::vector<unsigned char> read(bytes);
  ASSERT_EQ(cudaMemcpy(read.data(), mapped->pointer(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  std::size_t wrong = 0;
  for (std::size_t k = 0; k < bytes; ++k) wrong += read[k] != static_cast<unsigned char>(k * 7 + 1);
  EXPECT_EQ(wrong, 0u) << "bytes written by the other process, read through this one's mapping";
  ASSERT_EQ(cudaMemset(mapped->pointer(), 0xCD, 16), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(channel->send(1, 2, {}, "written").ok());
  int status = 0;
  ASSERT_EQ(::waitpid(owner, &status, 0), owner);
  EXPECT_TRUE(WIFEXITED(status)) << "the owner process did not exit";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the owner process failed at step " << WEXITSTATUS(status)
                                    << " (2 listen, 3 create, 4 fill, 5 export, 6 send, 7 wait, 8 read, 9 not "
                                       "rank 0's bytes)";
}

}  // namespace
}  // namespace canopy
