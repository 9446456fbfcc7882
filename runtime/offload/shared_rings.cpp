// SharedRings (see shared_rings.hpp).
#include "runtime/offload/shared_rings.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "runtime/offload/ring_sequence.hpp"

namespace canopy {

namespace {

constexpr std::uint32_t kRingTag = 0x80000002u;  // beside the call counters' (call_counters.cpp)

}  // namespace

Status SharedRings::share(FdChannel& channel, int process, int processes, std::unique_ptr<SharedRings>* out) {
  if (processes < 1 || static_cast<std::size_t>(kSlots) * (1 + processes) * sizeof(std::uint32_t) > kWordsBytes)
    return Status(StatusCode::invalid_argument,
                  fmt::format("the host ring across processes holds words for at most {} processes, not {}",
                              kWordsBytes / sizeof(std::uint32_t) / kSlots - 1, processes));
  std::unique_ptr<SharedRings> r(new SharedRings());
  r->process_ = process;
  r->rings_.resize(processes);
  const std::size_t bytes = ring_bytes();
  const int fd = memfd_create("canopy-host-ring", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int e = errno;
    if (fd >= 0) close(fd);
    return Status(StatusCode::internal, fmt::format("the host ring's shared memory: {}", std::strerror(e)));
  }
  const auto map = [&](int p, int from_fd) {
    void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, from_fd, 0);
    if (base == MAP_FAILED)
      return Status(StatusCode::internal, fmt::format("mapping process {}'s host ring: {}", p, std::strerror(errno)));
    r->rings_[p].base = static_cast<char*>(base);
    return Status();
  };
  Status s = map(process, fd);
  if (s.ok()) {
    std::vector<int> others;
    for (int p = 0; p < processes; ++p)
      if (p != process) others.push_back(p);
    s = channel.exchange(kRingTag, std::span<const int>(&fd, 1), "host ring", others, others,
                         [&](int p, FdMessage& m) {
                           if (m.fds.size() != 1)
                             return Status(StatusCode::internal,
                                           fmt::format("process {} sent {} descriptors for its host ring", p,
                                                       m.fds.size()));
                           return map(p, m.fds[0].get());
                         });
  }
  close(fd);
  if (!s.ok()) return s;  // the destructor unmaps what was mapped
  *out = std::move(r);
  return Status();
}

SharedRings::~SharedRings() {
  for (Ring& ring : rings_)
    if (ring.base) munmap(ring.base, ring_bytes());
}

std::uint32_t* SharedRings::fill_word(int ring, int slot) const {
  return reinterpret_cast<std::uint32_t*>(rings_[ring].base + kSlots * kSlotBytes) + slot;
}

std::uint32_t* SharedRings::drain_word(int ring, int slot, int process) const {
  return reinterpret_cast<std::uint32_t*>(rings_[ring].base + kSlots * kSlotBytes) + kSlots +
         slot * processes() + process;
}

std::uint64_t SharedRings::chunks(int ring) const {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(rings_[ring].chunks))
      .load(std::memory_order_relaxed);
}

void SharedRings::count_chunk(int ring) {
  std::atomic_ref<std::uint64_t>(rings_[ring].chunks).fetch_add(1, std::memory_order_relaxed);
}

void SharedRings::release() {
  for (int ring = 0; ring < processes(); ++ring) {
    // Every wait queued so far is for a value at most the ring's chunks.
    const std::uint32_t ahead = ring_release_value(static_cast<std::uint32_t>(chunks(ring) + kSlots));
    for (int slot = 0; slot < kSlots; ++slot) {
      std::atomic_ref<std::uint32_t>(*fill_word(ring, slot)).store(ahead, std::memory_order_release);
      for (int p = 0; p < processes(); ++p)
        std::atomic_ref<std::uint32_t>(*drain_word(ring, slot, p)).store(ahead, std::memory_order_release);
    }
  }
}

}  // namespace canopy
