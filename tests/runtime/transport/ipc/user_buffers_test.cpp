// UserBuffers without a GPU: a fake driver hands out allocations (base, size, buffer ID) as a caching allocator
// would, reusing addresses after a free. Exports make one handle per allocation and refuse a buffer that runs past its
// allocation; imports map once per (process, allocation), and a free and a new allocation at the same address between
// two calls gives a new mapping while the stale one is closed, never reused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

#include "runtime/transport/ipc/user_buffers.hpp"

namespace canopy {
namespace {

// A process's device memory as the driver sees it: allocations by base, buffer IDs counting up.
struct FakeMemory {
  std::map<std::uintptr_t, BufferAllocation> allocations;
  std::uint64_t next_id = 1;
  int handles_made = 0;
  std::map<std::uintptr_t, int> opened;  // mapped base here -> times
  std::set<std::uintptr_t> closed;
  std::uintptr_t next_mapping = 0x7f0000000000;

  std::uintptr_t allocate(std::uintptr_t base, std::size_t size) {
    allocations[base] = BufferAllocation{next_id++, base, size};
    return base;
  }
  void free(std::uintptr_t base) { allocations.erase(base); }

  BufferDriver driver() {
    BufferDriver d;
    d.allocation_of = [this](const void* p, BufferAllocation* out) {
      const auto at = reinterpret_cast<std::uintptr_t>(p);
      for (const auto& [base, a] : allocations)
        if (at >= base && at < base + a.size) {
          *out = a;
          return Status();
        }
      return Status(StatusCode::invalid_argument, "not device memory");
    };
    d.export_handle = [this](const BufferAllocation& a, IpcHandle* out) {
      ++handles_made;
      out->fill(0);
      std::memcpy(out->data(), &a.id, sizeof(a.id));  // a handle names its allocation
      return Status();
    };
    d.open = [this](const IpcHandle&, void** base) {
      const std::uintptr_t at = next_mapping;
      next_mapping += 0x100000000;
      ++opened[at];
      *base = reinterpret_cast<void*>(at);
      return Status();
    };
    d.close = [this](void* base) { closed.insert(reinterpret_cast<std::uintptr_t>(base)); };
    return d;
  }
};

void* at(std::uintptr_t a) { return reinterpret_cast<void*>(a); }

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
