// SignatureRing: the seqlocked entries of call signatures (see signature_ring.hpp).
#include "runtime/processes/signature_ring.hpp"

#include <atomic>
#include <cstring>
#include <new>

namespace canopy {
namespace {

// One entry: every field an atomic word, so a reader racing the writer reads old or new words, never a torn one, and
// the seqlock (the call number) says whether the words belong together.
struct alignas(kSignatureEntryBytes) Entry {
  std::atomic<std::uint64_t> call;   // 0: empty, or being written
  std::atomic<std::uint64_t> count;
  std::atomic<std::uint64_t> shape;  // collective, dtype, op, program_reduces (a byte each), then the root (32 bits)
  std::atomic<std::uint64_t> program;
  std::atomic<std::uint64_t> name[4];  // the program's name (written only for programs)
};
static_assert(sizeof(Entry) == kSignatureEntryBytes);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "shared between processes: must be lock-free");

constexpr std::size_t kNameWords = sizeof(Entry::name) / sizeof(std::uint64_t);
static_assert(sizeof(CallSignature::program_name) == sizeof(Entry::name));

Entry& entry(void* ring, std::uint64_t call) { return static_cast<Entry*>(ring)[call % kSignatureRingEntries]; }
const Entry& entry(const void* ring, std::uint64_t call) {
  return static_cast<const Entry*>(ring)[call % kSignatureRingEntries];
}

std::uint64_t pack_shape(const CallSignature& s) {
  return static_cast<std::uint64_t>(static_cast<std::uint8_t>(s.collective)) |
         static_cast<std::uint64_t>(static_cast<std::uint8_t>(s.dtype)) << 8 |
         static_cast<std::uint64_t>(static_cast<std::uint8_t>(s.op)) << 16 |
         static_cast<std::uint64_t>(s.program_reduces ? 1 : 0) << 24 |
         static_cast<std::uint64_t>(static_cast<std::uint32_t>(s.root)) << 32;
}

void unpack_shape(std::uint64_t w, CallSignature* s) {
  s->collective = static_cast<Collective>(w & 0xff);
  s->dtype = static_cast<DataType>((w >> 8) & 0xff);
  s->op = static_cast<ReduceOp>((w >> 16) & 0xff);
  s->program_reduces = ((w >> 24) & 1) != 0;
  s->root = static_cast<std::int32_t>(static_cast<std::uint32_t>(w >> 32));
}

}  // namespace

void start_signature_ring(void* ring) {
  for (std::size_t i = 0; i < kSignatureRingEntries; ++i) new (static_cast<Entry*>(ring) + i) Entry{};
}

void write_signature(void* ring, const CallSignature& s) {
  Entry& e = entry(ring, s.call);
  e.call.store(0, std::memory_order_relaxed);
  // A reader that sees any field below also sees the cleared call number (its acquire fence pairs with this one).
  std::atomic_thread_fence(std::memory_order_release);
  e.count.store(s.count, std::memory_order_relaxed);
  e.shape.store(pack_shape(s), std::memory_order_relaxed);
  e.program.store(s.program, std::memory_order_relaxed);
  if (s.program)
    for (std::size_t i = 0; i < kNameWords; ++i) {
      std::uint64_t w = 0;
      std::memcpy(&w, s.program_name.data() + i * sizeof w, sizeof w);
      e.name[i].store(w, std::memory_order_relaxed);
    }
  e.call.store(s.call, std::memory_order_release);
}

SignatureRead read_signature(const void* ring, std::uint64_t call, CallSignature* out, void (*between)(void*),
                             void* context) {
  const Entry& e = entry(ring, call);
  if (e.call.load(std::memory_order_acquire) != call) return SignatureRead::absent;
  out->call = call;
  out->count = e.count.load(std::memory_order_relaxed);
  unpack_shape(e.shape.load(std::memory_order_relaxed), out);
  out->program = e.program.load(std::memory_order_relaxed);
  if (out->program)
    for (std::size_t i = 0; i < kNameWords; ++i) {
      const std::uint64_t w = e.name[i].load(std::memory_order_relaxed);
      std::memcpy(out->program_name.data() + i * sizeof w, &w, sizeof w);
    }
  else
    out->program_name.fill('\0');
  out->program_name.back() = '\0';
  if (between) between(context);
  std::atomic_thread_fence(std::memory_order_acquire);
  return e.call.load(std::memory_order_relaxed) == call ? SignatureRead::whole : SignatureRead::torn;
}

}  // namespace canopy
