// The calls the host model of the direct inbox kernels runs (direct_inbox_model.hpp): which collective, root, count,
// pieces or shots a launch has; which ranks store into which inboxes in each piece or shot (the kernels' inbox_sends,
// inbox_shot_a and inbox_shot_b); how a slot is cut into block parts; the inputs; a model cell; the two-shot faults
// the model must catch; and mixed sequences of calls, as the tests draw them.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace canopy::inbox_model {

enum Kind { kBroadcast, kReduce, kAllReduce, kAllGather, kReduceScatter };

struct Call {
  Kind kind = kAllReduce;
  int root = 0;
  std::uint64_t count = 1;
  std::uint64_t piece = 0;  // the launch's kernel's Config::kPiece (elements; 0: whole parts)
  bool two_shot = false;    // the two-shot kernel (broadcast, reduce, allreduce; whole parts)
};

constexpr std::uint64_t kVec = 4;  // elements per 16-byte vector (f32)

inline bool sends(const Call& c, int me, int peer) {  // inbox_sends
  if (me == peer) return false;
  if (c.kind == kBroadcast) return me == c.root;
  if (c.kind == kReduce) return peer == c.root;
  return true;
}

// The two-shot kernels' inbox_shot_a and inbox_shot_b: whether `me` stores into `peer`'s inbox in shot A (share
// `peer` of its input) and in shot B (its combined share).
inline bool shot_a(const Call& c, int me, int peer) { return me != peer && (c.kind != kBroadcast || me == c.root); }
inline bool shot_b(const Call& c, int me, int peer) {
  if (me == peer) return false;
  if (c.kind == kBroadcast) return peer != c.root;
  if (c.kind == kReduce) return peer == c.root;
  return true;
}

// Whether `me` stores into `peer`'s inbox in piece (one-shot) or shot (two-shot: 0 A, 1 B) k, and in any of them.
inline bool into(const Call& c, std::uint64_t k, int me, int peer) {
  if (!c.two_shot) return sends(c, me, peer);
  return k == 0 ? shot_a(c, me, peer) : shot_b(c, me, peer);
}
inline bool into_any(const Call& c, int me, int peer) { return into(c, 0, me, peer) || into(c, 1, me, peer); }

inline double input(int launch, int rank, std::uint64_t j) {
  return static_cast<double>((launch * 31 + rank * 7 + j * 3) % 17);
}

// Part `p` of `parts` of `n` elements, [first, last), as the kernels cut it: whole vectors but for the last part. The
// one-shot kernels cut a slot into a part per block; the two-shot ones into a part per block of every rank's share
// (part q x blocks + b).
inline std::pair<std::uint64_t, std::uint64_t> part(std::uint64_t n, int p, int parts) {
  const std::uint64_t vectors = n / kVec;
  const std::uint64_t first = vectors * p / parts * kVec;
  const std::uint64_t last = p + 1 == parts ? n : vectors * (p + 1) / parts * kVec;
  return {first, last};
}

struct Cell {
  double value = 0;
  int written = 0;  // launch that stored it (0: none)
  int read = 0;     // launch that last read it
};

// Faults of the two-shot kernels the model must catch: a share combined before the peers' shot A arrived, and the
// peers' shares moved out before their shot B arrived.
enum class TwoShotFault { none, combine_before_shot_a, collect_before_shot_b };

inline std::vector<Call> mixed_calls(int ranks, int launches, std::mt19937_64& rng) {
  std::vector<Call> calls;
  const std::uint64_t counts[] = {1, 3, 8, 13, 37, 64, 101};
  for (int k = 0; k < launches; ++k) {
    Call c;
    c.kind = static_cast<Kind>(rng() % 5);
    c.root = static_cast<int>(rng() % ranks);
    c.count = counts[rng() % 7];
    calls.push_back(c);
  }
  return calls;
}

// Broadcasts and reduces in pieces, the others whole (the default across GPUs): launches of both kinds share the "done"
// words, so every launch's words must exceed what a launch before it posted, in pieces or whole.
inline std::vector<Call> in_pieces_where_one_way(std::vector<Call> calls) {
  for (Call& c : calls) c.piece = c.kind == kBroadcast || c.kind == kReduce ? kVec : 0;
  return calls;
}

}  // namespace canopy::inbox_model
