// SharedRings (see shared_rings.hpp).
#include "runtime/offload/shared_rings.hpp"

#include <fmt/format.h>

#include <atomic>

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
  r->chunks_ = std::vector<std::uint64_t>(processes, 0);
  r->read_last_.assign(static_cast<std::size_t>(processes) * kSlots * processes, 0);
  if (Status s = r->memory_.share(channel, kRingTag, "the host ring", process, processes, ring_bytes(), true); !s.ok())
    return s;
  *out = std::move(r);
  return Status();
}

char* SharedRings::base(int ring) const { return static_cast<char*>(memory_.at(ring)); }

std::uint32_t* SharedRings::fill_word(int ring, int slot) const {
  return reinterpret_cast<std::uint32_t*>(base(ring) + kSlots * kSlotBytes) + slot;
}

std::uint32_t* SharedRings::drain_word(int ring, int slot, int process) const {
  return reinterpret_cast<std::uint32_t*>(base(ring) + kSlots * kSlotBytes) + kSlots +
         slot * processes() + process;
}

std::uint64_t SharedRings::chunks(int ring) const {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(chunks_[ring]))
      .load(std::memory_order_relaxed);
}

void SharedRings::count_chunk(int ring, int slot, int reader) {
  const int n = processes();
  char* read = &read_last_[(static_cast<std::size_t>(ring) * kSlots + slot) * n];
  for (int p = 0; p < n; ++p) read[p] = reader < 0 ? p != ring : p == reader;
  std::atomic_ref<std::uint64_t>(chunks_[ring]).fetch_add(1, std::memory_order_relaxed);
}

bool SharedRings::read_last(int ring, int slot, int process) const {
  return read_last_[(static_cast<std::size_t>(ring) * kSlots + slot) * processes() + process] != 0;
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
