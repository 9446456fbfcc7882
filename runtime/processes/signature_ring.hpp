// SignatureRing: the last kSignatureRingEntries call signatures of one process, in shared memory its owner alone
// writes (CallCounters' pages): entry k mod K holds call k's. Each entry is one cache line whose call number is a
// seqlock: the writer clears it, fills the fields, then stores the call number (release); a reader that finds call k
// there, reads the fields, and finds call k there again has a whole signature, never a torn or overwritten one. A
// process more than K calls ahead of another has overwritten the entry the other would read: that pair is not
// compared (read_signature says absent or torn).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/comm/call_signature.hpp"

namespace canopy {

constexpr std::size_t kSignatureRingEntries = 512;
constexpr std::size_t kSignatureEntryBytes = 64;  // a cache line
constexpr std::size_t kSignatureRingBytes = kSignatureRingEntries * kSignatureEntryBytes;

// Makes the entries at `ring` (kSignatureRingBytes, 64-byte aligned, zeroed), all empty.
void start_signature_ring(void* ring);
// Writes `s` into its entry (s.call mod K, s.call > 0) of this process's `ring`; its call number is stored last
// (release). No allocation.
void write_signature(void* ring, const CallSignature& s);

enum class SignatureRead {
  absent,  // the entry does not hold call `call` (not made yet, or overwritten by a call K later)
  torn,    // it held call `call`, but no longer once its fields were read: overwritten meanwhile, not comparable
  whole,   // *out is call `call`'s signature as its process wrote it
};
// Reads call `call`'s signature from another process's `ring`. `between`, when given, runs after the fields are read
// and before the call number is checked again (a test's hook to overwrite the entry there).
SignatureRead read_signature(const void* ring, std::uint64_t call, CallSignature* out,
                             void (*between)(void* context) = nullptr, void* context = nullptr);

}  // namespace canopy
