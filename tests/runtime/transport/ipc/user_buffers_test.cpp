// UserBuffers without a GPU: a fake driver hands out allocations (base, size, buffer ID) as a caching allocator
// would, reusing addresses after a free. Exports make one handle per allocation and refuse a buffer that runs past its
// allocation; imports map once per (process, allocation), and a free and a new allocation at the same address between
// two calls gives a new mapping while the stale one is closed, never reused. Memory from cuMemCreate crosses as a
// descriptor, once; a mapping the driver refuses (an allocation shorter than announced) is an error that keeps nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <set>

#include "runtime/transport/ipc/user_buffers.hpp"
#include "tests/runtime/transport/ipc/fake_memory.hpp"

namespace canopy {
namespace {


TEST(UserBuffers, AnAllocationGetsOneHandleAndABufferItsOffset) {
  FakeMemory m;
  m.allocate(0x10000, 1 << 20);
  BufferExports exports(m.driver());
  SharedBuffer a, b;
  ASSERT_TRUE(exports.share(at(0x10000 + 4096), 8192, &a).ok());
  ASSERT_TRUE(exports.share(at(0x10000 + 65536), 4096, &b).ok());
  EXPECT_EQ(m.handles_made, 1);
  EXPECT_EQ(a.allocation.id, b.allocation.id);
  EXPECT_EQ(a.offset, 4096u);
  EXPECT_EQ(b.offset, 65536u);
  EXPECT_EQ(a.handle, b.handle);
}

TEST(UserBuffers, ABufferPastItsAllocationOrOutsideDeviceMemoryIsRefused) {
  FakeMemory m;
  m.allocate(0x10000, 1 << 20);
  BufferExports exports(m.driver());
  SharedBuffer s;
  const Status past = exports.share(at(0x10000 + (1 << 20) - 4096), 8192, &s);
  EXPECT_FALSE(past.ok());
  EXPECT_THAT(past.message(), ::testing::HasSubstr("runs past its allocation"));
  EXPECT_FALSE(exports.share(at(0x900000), 16, &s).ok());
}

// A peer process with one allocation of 1 MiB at 0x10000, and this process mapping its buffers.
class UserBuffersOfAPeer : public ::testing::Test {
 protected:
  void SetUp() override { peer.allocate(0x10000, 1 << 20); }
  FakeMemory peer;
  FakeMemory here;
  BufferExports exports{peer.driver()};
  BufferImports imports{here.driver()};
};

TEST_F(UserBuffersOfAPeer, ItsBufferIsMappedOnceAndFoundByItsAllocation) {
  SharedBuffer s;
  void* first = nullptr;
  void* second = nullptr;
  ASSERT_TRUE(exports.share(at(0x10000 + 4096), 4096, &s).ok());
  ASSERT_TRUE(imports.map(1, s, &first).ok());
  ASSERT_TRUE(exports.share(at(0x10000 + 8192), 4096, &s).ok());
  ASSERT_TRUE(imports.map(1, s, &second).ok());
  EXPECT_EQ(imports.mapped(), 1u);
  EXPECT_EQ(static_cast<char*>(second) - static_cast<char*>(first), 4096);
  // Another process's allocation with the same ID is another mapping.
  ASSERT_TRUE(imports.map(2, s, &second).ok());
  EXPECT_EQ(imports.mapped(), 2u);
}

// The caching allocator's hazard: between two calls the peer frees its buffer and allocates another at the same
// address. The new allocation has a new buffer ID, so the importer maps it afresh and closes the stale mapping,
// which a cache keyed on the pointer would have written through.
TEST_F(UserBuffersOfAPeer, AFreeAndReallocateAtTheSameAddressBetweenTwoCallsMapsTheNewAllocation) {
  SharedBuffer call1, call2;
  void* before = nullptr;
  void* after = nullptr;
  ASSERT_TRUE(exports.share(at(0x10000), 1 << 20, &call1).ok());
  ASSERT_TRUE(imports.map(1, call1, &before).ok());
  peer.free(0x10000);
  peer.allocate(0x10000, 2 << 20);  // the same address, a larger segment
  ASSERT_TRUE(exports.share(at(0x10000), 1 << 20, &call2).ok());
  EXPECT_NE(call2.allocation.id, call1.allocation.id);
  EXPECT_NE(call2.handle, call1.handle);  // a new handle, not the cached one of the freed allocation
  EXPECT_EQ(peer.handles_made, 2);
  EXPECT_EQ(exports.handles(), 1u);  // the freed allocation's handle is gone
  ASSERT_TRUE(imports.map(1, call2, &after).ok());
  EXPECT_NE(after, before);
  EXPECT_EQ(imports.mapped(), 1u);
  EXPECT_TRUE(here.closed.count(reinterpret_cast<std::uintptr_t>(before)));
}

// Memory from cuMemCreate (ncclMemAlloc's): its descriptor crosses the first time only, the importer maps it once and
// closes the descriptor it was given, and a free and a new allocation at the same address sends a new one while the
// stale mapping is closed.
TEST(UserBuffers, MemoryFromCuMemCreateCrossesAsADescriptorTheFirstTimeOnly) {
  FakeMemory peer;
  peer.allocate_fd(0x10000, 1 << 20);
  FakeMemory here;
  BufferExports exports(peer.driver());
  BufferImports imports(here.driver());
  int sent = -1;  // the descriptor "on the channel"
  int received = 0;
  const auto receive = [&](UniqueFd* fd) {
    ++received;
    *fd = UniqueFd(sent);
    return Status();
  };
  SharedBuffer s;
  UniqueFd fd;
  ASSERT_TRUE(exports.share(at(0x10000 + 4096), 4096, &s, &fd).ok());
  EXPECT_EQ(s.fd_follows, 1u);
  EXPECT_TRUE(s.allocation.by_fd);
  ASSERT_GE(fd.get(), 0);
  sent = fd.release();
  void* first = nullptr;
  ASSERT_TRUE(imports.map(1, s, &first, receive).ok());
  EXPECT_EQ(received, 1);
  EXPECT_LT(fcntl(sent, F_GETFD), 0);  // the importer closed it once mapped
  // The second call: nothing sent, the mapping found.
  ASSERT_TRUE(exports.share(at(0x10000 + 8192), 4096, &s, &fd).ok());
  EXPECT_EQ(s.fd_follows, 0u);
  EXPECT_EQ(fd.get(), -1);
  void* second = nullptr;
  ASSERT_TRUE(imports.map(1, s, &second, receive).ok());
  EXPECT_EQ(received, 1);
  EXPECT_EQ(static_cast<char*>(second) - static_cast<char*>(first), 4096);
  EXPECT_EQ(peer.fds_made, 1);
  // Freed and made again at the same address: a new descriptor, the stale mapping closed.
  peer.free(0x10000);
  peer.allocate_fd(0x10000, 1 << 20);
  ASSERT_TRUE(exports.share(at(0x10000), 4096, &s, &fd).ok());
  EXPECT_EQ(s.fd_follows, 1u);
  sent = fd.release();
  void* third = nullptr;
  ASSERT_TRUE(imports.map(1, s, &third, receive).ok());
  EXPECT_NE(third, first);
  EXPECT_EQ(imports.mapped(), 1u);
  EXPECT_TRUE(here.closed_fd.count(reinterpret_cast<std::uintptr_t>(first) - 4096));  // its mapping's base
  EXPECT_TRUE(here.closed.empty());  // descriptor mappings are closed as such
}

TEST(UserBuffers, MemoryFromCuMemCreateNeedsAWayToSendItsDescriptor) {
  FakeMemory peer;
  peer.allocate_fd(0x10000, 1 << 20);
  BufferExports exports(peer.driver());
  SharedBuffer s;
  const Status refused = exports.share(at(0x10000), 4096, &s);
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(refused.message(), ::testing::HasSubstr("file descriptor"));
  EXPECT_TRUE(s.allocation.by_fd);  // the cause, for the caller's hint (CANOPY_ENGINE_FD_BUFFERS)
  // An importer that never got the descriptor says the caches are out of step, never maps something else.
  UniqueFd fd;
  ASSERT_TRUE(exports.share(at(0x10000), 4096, &s, &fd).ok());
  fd = UniqueFd();  // closed: never sent
  s.fd_follows = 0;
  FakeMemory here;
  BufferImports imports(here.driver());
  void* p = nullptr;
  const Status lost = imports.map(1, s, &p);
  EXPECT_FALSE(lost.ok());
  EXPECT_THAT(lost.message(), ::testing::HasSubstr("never sent"));
  EXPECT_TRUE(here.opened.empty());
  // forget(): the exporter sends it again.
  exports.forget(s.allocation.id);
  ASSERT_TRUE(exports.share(at(0x10000), 4096, &s, &fd).ok());
  EXPECT_EQ(s.fd_follows, 1u);
}

// The size mapped comes from the peer's message; the driver (cuMemMap) refuses one beyond the allocation behind the
// descriptor. That refusal is the import's error: nothing is kept, the descriptor is closed, and a later correct
// share maps.
TEST(UserBuffers, AMappingTheDriverRefusesIsAnErrorAndNothingIsKept) {
  FakeMemory peer;
  peer.allocate_fd(0x10000, 1 << 20);
  FakeMemory here;
  here.refuse_fd_maps = "cuMemMap of 1048576 bytes of another process's memory on GPU 0 failed (CUresult 1): the "
                        "allocation behind its descriptor is smaller than the size it announced";
  BufferExports exports(peer.driver());
  BufferImports imports(here.driver());
  int sent = -1;
  const auto receive = [&](UniqueFd* fd) {
    *fd = UniqueFd(sent);
    return Status();
  };
  SharedBuffer s;
  UniqueFd fd;
  ASSERT_TRUE(exports.share(at(0x10000), 4096, &s, &fd).ok());
  sent = fd.release();
  void* p = nullptr;
  const Status refused = imports.map(1, s, &p, receive);
  EXPECT_EQ(refused.code(), StatusCode::remote_error);
  EXPECT_THAT(refused.message(), ::testing::HasSubstr("smaller than the size it announced"));
  EXPECT_EQ(imports.mapped(), 0u);
  EXPECT_TRUE(here.opened.empty());
  EXPECT_LT(fcntl(sent, F_GETFD), 0);  // closed, not kept
  // The exporter sends it again (the caller forgets it on a failed transfer), and this time it maps.
  here.refuse_fd_maps.clear();
  exports.forget(s.allocation.id);
  ASSERT_TRUE(exports.share(at(0x10000), 4096, &s, &fd).ok());
  ASSERT_EQ(s.fd_follows, 1u);
  sent = fd.release();
  ASSERT_TRUE(imports.map(1, s, &p, receive).ok());
  EXPECT_EQ(imports.mapped(), 1u);
}

TEST(UserBuffers, TheImportsCloseEveryMappingAtTheEnd) {
  FakeMemory peer;
  peer.allocate(0x10000, 4096);
  peer.allocate(0x20000, 4096);
  BufferExports exports(peer.driver());
  FakeMemory here;
  {
    BufferImports imports(here.driver());
    SharedBuffer s;
    void* p = nullptr;
    for (std::uintptr_t base : {0x10000, 0x20000}) {
      ASSERT_TRUE(exports.share(at(base), 4096, &s).ok());
      ASSERT_TRUE(imports.map(1, s, &p).ok());
    }
    EXPECT_EQ(imports.mapped(), 2u);
  }
  EXPECT_EQ(here.closed.size(), 2u);
}

}  // namespace
}  // namespace canopy
