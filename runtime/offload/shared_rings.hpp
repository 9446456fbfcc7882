// SharedRings: the host memory of ProcessHostRing (process_host_ring.hpp) without CUDA, so it is tested on any CPU.
// Every process of a communicator makes one ring in a memfd of its own: kSlots slots of kSlotBytes, then a page of
// 32-bit words (per slot a fill word, then a drain word per process). It passes the memfd to the others over the
// FdChannel and maps every process's ring for reading and writing (SharedMemfds). It also keeps how many chunks have
// passed through each ring (ring_sequence.hpp numbers them) and which processes read each slot's last chunk (a
// broadcast's or an allreduce's every other process, a reduce's root alone: a refill waits for those only), and
// release() moves every word far ahead of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"
#include "runtime/transport/ipc/shared_memfds.hpp"

namespace canopy {

class SharedRings {
 public:
  static constexpr int kSlots = 4;
  static constexpr std::size_t kSlotBytes = std::size_t{4} << 20;  // as HostStaging's
  static constexpr std::size_t kWordsBytes = 4096;

  // Every process calls it together (one step on `channel`): this process is `process` of `processes`.
  static Status share(FdChannel& channel, int process, int processes, std::unique_ptr<SharedRings>* out);
  ~SharedRings() = default;  // unmaps (SharedMemfds)
  SharedRings(const SharedRings&) = delete;
  SharedRings& operator=(const SharedRings&) = delete;

  int process() const { return process_; }
  int processes() const { return memory_.processes(); }
  static std::size_t ring_bytes() { return kSlots * kSlotBytes + kWordsBytes; }
  char* base(int ring) const;
  char* slot(int ring, int slot) const { return base(ring) + static_cast<std::size_t>(slot) * kSlotBytes; }
  std::uint32_t* fill_word(int ring, int slot) const;
  std::uint32_t* drain_word(int ring, int slot, int process) const;

  // The chunks through `ring` so far (every process counts each ring's alike, whether it reads them or not), and one
  // more, in `slot`, read by `reader` alone (a reduce's root) or, with -1, by every process but the ring's own (a
  // broadcast, an allreduce).
  std::uint64_t chunks(int ring) const;
  void count_chunk(int ring, int slot, int reader = -1);
  // Whether `process` read the last chunk through `slot` of `ring` (before refilling the slot, its owner waits for
  // their drain words alone). False before the slot's first chunk.
  bool read_last(int ring, int slot, int process) const;
  // Every fill and drain word of every ring moves far ahead of any value a wait queued so far uses (ring_sequence.hpp),
  // so that every such wait ends. From any thread.
  void release();

 private:
  SharedRings() = default;
  int process_ = 0;
  SharedMemfds memory_;                // a ring per process
  std::vector<std::uint64_t> chunks_;  // per ring; read by release() beside a call that raises it (atomic_ref)
  std::vector<char> read_last_;        // per ring, slot and process: read_last
};

}  // namespace canopy
