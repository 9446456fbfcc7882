// RelayScratch: the memory Blink+'s relays of a one-process communicator lend its kernels
// (CommunicatorOptions::relays).
// Each relay GPU holds one area on the device its forwarding runs on, shared by every kernel as the ranks' scratch is
// (launches on a GPU run in order): a kernel's relay participants on that GPU take consecutive parts of it
// (PreparedCollective::relay_rings), and the area grows to the largest total any loaded kernel needs, never past the
// communicator's cap (CANOPY_RELAY_MEMORY; the kernels' shapes are fitted to it, codegen/relay_memory.hpp). No user
// buffer is ever in it or mapped for it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/logger.hpp"
#include "runtime/launch/prepared_collective.hpp"

namespace canopy {

class RelayScratch {
 public:
  // Relay k (of `names`) runs on CUDA device ordinals[k]; `cap`: bytes a relay GPU may give at most.
  RelayScratch(std::vector<std::string> names, std::vector<int> ordinals, std::int64_t cap, Logger log);
  ~RelayScratch();  // frees every area (the caller has waited for the launches)
  RelayScratch(const RelayScratch&) = delete;
  RelayScratch& operator=(const RelayScratch&) = delete;

  // Whether `p`'s relay participants need more of some relay GPU than its area holds.
  bool short_for(const PreparedCollective& p) const;
  // Grows every area `p` needs more of (the caller waited for the launches using it, unless `keep_old`: captured
  // graphs still name the old area, kept until the end). Throws canopy::Error when a relay GPU would pass the cap or an
  // allocation fails.
  void grow_for(const PreparedCollective& p, bool keep_old);
  // Where each of `p`'s relay participants' rings are, in participant order, into *out (what LaunchTarget takes).
  void rings_of(const PreparedCollective& p, std::vector<void*>* out) const;
  // Bytes held on relay GPU k (its area; 0 before a kernel needs it).
  std::int64_t bytes(int k) const { return bytes_[k]; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
  std::vector<int> ordinals_;
  std::int64_t cap_;
  Logger log_;
  std::vector<void*> areas_;
  std::vector<std::int64_t> bytes_;
  std::vector<std::pair<int, void*>> retired_;  // (ordinal, area) kept for captured graphs
};

// Bytes the `rings` of one kernel need in each relay GPU's area (index as the placement's relays): the end of its
// last ring.
std::vector<std::int64_t> relay_bytes_needed(const std::vector<RelayRing>& rings, int relays);

}  // namespace canopy
