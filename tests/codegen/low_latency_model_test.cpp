// A host model of the low-latency protocol's flow control (templates/low_latency.cuh), as the schedule simulator is
// of the trees': every block of every rank is a state machine over host memory (LL lines with their flags, ack
// counters), stepped one line store, line load or counter access at a time in a seeded random order; a device starts
// launch e + 1 only when all its blocks of launch e are done (stream order), and blocks of one launch start when the
// scheduler picks them, so some straggle. Launches mix collectives, roots and counts, as a communicator's calls do
// (each count spreads its lines over the blocks differently). Checked: a sender never refills a line its receiver has
// not read yet (on a GPU the receiver would spin forever on a flag that moved on), nothing deadlocks, and every
// value arrives. Two ways to acknowledge: on entering the next launch (the template since d86f898) and at the end
// of each block (before it), whose ack covered only its own block's lines; the model must catch that hazard for its
// passes to mean anything. Allreduces are one-shot or two-shot (run_ll_two_shot_block: a reduce-scatter into the
// owners' slots, then each owner's combined share into every peer's slot, on other lines of the same slots), so the
// model also checks that two-shot writes no line twice in a launch and reads only what was meant for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace canopy {
namespace {

enum class Acks { on_entry, at_end };
enum Kind { kBroadcast, kReduce, kAllReduce, kTwoShotAllReduce };

struct Call {
  Kind kind = kAllReduce;
  int root = 0;
  int groups = 1;  // 8-byte groups per slot: the count
};

struct Line {
  std::uint64_t flag = 0, data = 0, read = 0;  // read: the launch that last read it
};

bool sends(const Call& c, int me, int peer) {
  if (me == peer) return false;
  if (c.kind == kBroadcast) return me == c.root;
  if (c.kind == kReduce) return peer == c.root;
  return true;
}

// One line access of a block: a store of `value` into, or a load expecting it from, line g of `slot` of `owner`'s
// buffer in the launch's parity.
struct Access {
  bool store;
  int owner, slot, g;
  std::uint64_t value;
};

std::uint64_t value(std::uint64_t e, int from, int to, int g) { return e * 1000003 + from * 1009 + to * 101 + g; }

class LowLatencyModel {
 public:
  LowLatencyModel(int ranks, std::vector<int> device_of_rank, int blocks, int lines, Acks acks)
      : ranks_(ranks),
        blocks_(blocks),
        lines_(lines),
        acks_(acks),
        device_of_rank_(std::move(device_of_rank)),
        memory_(static_cast<std::size_t>(ranks) * 2 * ranks * lines),
        ack_(static_cast<std::size_t>(ranks) * ranks * blocks) {}

  // Runs every call on every rank; returns "" or what went wrong first.
  std::string run(const std::vector<Call>& calls, std::uint32_t seed) {
    std::mt19937 rng(seed);
    int devices = 0;
    for (int d : device_of_rank_) devices = std::max(devices, d + 1);
    std::vector<std::size_t> launch_of(devices, 0);  // the call each device runs now
    std::vector<Block> running;
    const auto start = [&](int device) {
      for (int r = 0; r < ranks_; ++r)
        if (device_of_rank_[r] == device)
          for (int b = 0; b < blocks_; ++b) running.push_back(Block{r, b, launch_of[device] + 1, 0, 0, {}});
    };
    for (int d = 0; d < devices; ++d) start(d);
    while (!running.empty()) {
      std::vector<std::size_t> ready;
      for (std::size_t k = 0; k < running.size(); ++k)
        if (can_step(calls[running[k].e - 1], running[k])) ready.push_back(k);
      if (ready.empty()) return "deadlock with " + std::to_string(running.size()) + " blocks waiting";
      Block& blk = running[ready[rng() % ready.size()]];
      if (std::string bad = step(calls[blk.e - 1], blk); !bad.empty()) return bad;
      if (blk.phase != kDone) continue;
      const int device = device_of_rank_[blk.rank];
      std::erase_if(running, [](const Block& x) { return x.phase == kDone; });
      const bool device_idle = std::none_of(running.begin(), running.end(),
                                            [&](const Block& x) { return device_of_rank_[x.rank] == device; });
      if (device_idle && ++launch_of[device] < calls.size()) start(device);
    }
    return "";
  }

 private:
  enum Phase { kEnterAcks, kWaitAcks, kMove, kEndAcks, kDone };
  struct Block {
    int rank, b;
    std::uint64_t e;  // the launch, from 1
    int phase;
    std::size_t pos;            // within the phase's list of accesses
    std::vector<Access> moves;  // the kMove phase's, made on entering it
  };

  // Block k's line stores and loads in call c, in the order the template issues them (per thread; the model runs a
  // block's in sequence).
  std::vector<Access> moves(const Call& c, const Block& k) const {
    std::vector<Access> out;
    const int me = k.rank;
    if (c.kind == kTwoShotAllReduce) {
      for (int d = 0; d < ranks_; ++d)  // 1. share d of my input into d's slot `me`
        if (d != me)
          for (int g = share_first(c, d, k.b); g < share_last(c, d, k.b); ++g)
            out.push_back({true, d, me, g, value(k.e, me, d, g)});
      for (int g = share_first(c, me, k.b); g < share_last(c, me, k.b); ++g) {  // 2. my share, combined, to all
        for (int q = 0; q < ranks_; ++q)
          if (q != me) out.push_back({false, me, q, g, value(k.e, q, me, g)});
        for (int d = 0; d < ranks_; ++d)
          if (d != me) out.push_back({true, d, me, g, value(k.e, me, d, g) + kCombined});
      }
      for (int q = 0; q < ranks_; ++q)  // 3. the other shares from their owners
        if (q != me)
          for (int g = share_first(c, q, k.b); g < share_last(c, q, k.b); ++g)
            out.push_back({false, me, q, g, value(k.e, q, me, g) + kCombined});
      return out;
    }
    const std::vector<int> to = peers(c, k, true), from = peers(c, k, false);
    for (int g = first(c, k.b); g < last(c, k.b); ++g)
      for (int d : to) out.push_back({true, d, me, g, value(k.e, me, d, g)});
    for (int g = first(c, k.b); g < last(c, k.b); ++g)
      for (int q : from) out.push_back({false, me, q, g, value(k.e, q, me, g)});
    return out;
  }
  static constexpr std::uint64_t kCombined = std::uint64_t{1} << 60;  // a two-shot owner's combined share

  Line& line(int owner, std::uint64_t e, int slot, int g) {
    return memory_[((static_cast<std::size_t>(owner) * 2 + e % 2) * ranks_ + slot) * lines_ + g];
  }
  std::uint64_t& ack(int owner, int peer, int b) {
    return ack_[(static_cast<std::size_t>(owner) * ranks_ + peer) * blocks_ + b];
  }
  int first(const Call& c, int b) const { return c.groups * b / blocks_; }
  int last(const Call& c, int b) const { return c.groups * (b + 1) / blocks_; }
  // Block b's part of share q of a two-shot allreduce (ll_share_part).
  int share_first(const Call& c, int q, int b) const {
    const int s0 = c.groups * q / ranks_, s1 = c.groups * (q + 1) / ranks_;
    return s0 + (s1 - s0) * b / blocks_;
  }
  int share_last(const Call& c, int q, int b) const { return share_first(c, q, b + 1); }
  std::vector<int> peers(const Call& c, const Block& k, bool sending) const {
    std::vector<int> out;
    for (int q = 0; q < ranks_; ++q)
      if (sending ? sends(c, k.rank, q) : sends(c, q, k.rank)) out.push_back(q);
    return out;
  }
  std::size_t accesses(const Call& c, const Block& k) const {
    switch (k.phase) {
      case kEnterAcks:
        return acks_ == Acks::on_entry ? ranks_ - 1 : 0;
      case kEndAcks:
        return acks_ == Acks::at_end ? ranks_ - 1 : 0;
      case kWaitAcks:
        return k.e > 2 ? peers(c, k, true).size() : 0;
      case kMove:
        return k.moves.size();
    }
    return 0;
  }
  int other(const Block& k, std::size_t i) const {
    return static_cast<int>(i) < k.rank ? static_cast<int>(i) : static_cast<int>(i) + 1;
  }

  bool can_step(const Call& c, const Block& k) {
    if (k.pos >= accesses(c, k)) return true;  // moves to the next phase
    if (k.phase == kWaitAcks) return ack(k.rank, peers(c, k, true)[k.pos], k.b) >= k.e - 2;
    if (k.phase == kMove && !k.moves[k.pos].store) {
      const Access& a = k.moves[k.pos];
      return line(a.owner, k.e, a.slot, a.g).flag == k.e;
    }
    return true;
  }

  std::string step(const Call& c, Block& k) {
    if (k.pos >= accesses(c, k)) {
      ++k.phase;
      k.pos = 0;
      if (k.phase == kMove) k.moves = moves(c, k);
      return "";
    }
    const std::size_t i = k.pos++;
    const std::string where =
        "launch " + std::to_string(k.e) + ", rank " + std::to_string(k.rank) + " block " + std::to_string(k.b);
    switch (k.phase) {
      case kEnterAcks:
        ack(other(k, i), k.rank, k.b) = k.e - 1;
        break;
      case kEndAcks:
        ack(other(k, i), k.rank, k.b) = k.e;
        break;
      case kWaitAcks:
        break;  // can_step saw it
      case kMove: {
        const Access& a = k.moves[i];
        Line& l = line(a.owner, k.e, a.slot, a.g);
        if (a.store) {
          if (l.flag > l.read)
            return where + " refilled rank " + std::to_string(a.owner) + "'s line " + std::to_string(a.g) +
                   " of launch " + std::to_string(l.flag) + " before it was read";
          l.flag = k.e;
          l.data = a.value;
        } else {
          if (l.data != a.value) return where + " read a wrong value";
          l.read = k.e;
        }
        break;
      }
    }
    return "";
  }

  int ranks_, blocks_, lines_;
  Acks acks_;
  std::vector<int> device_of_rank_;
  std::vector<Line> memory_;        // per owner rank: 2 parities x a slot per sender x lines
  std::vector<std::uint64_t> ack_;  // per owner rank: a counter per peer and block
};

// Calls as a communicator gets them: random collectives, roots and counts (1 to `lines` groups).
std::vector<Call> random_calls(int ranks, int lines, int n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Call> calls(n);
  for (Call& c : calls) {
    c.kind = static_cast<Kind>(rng() % 4);
    c.root = static_cast<int>(rng() % ranks);
    c.groups = 1 + static_cast<int>(rng() % lines);
  }
  return calls;
}

struct Shape {
  int ranks;
  std::vector<int> device_of_rank;
  int blocks;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {{2, {0, 1}, 1},       {2, {0, 1}, 3},       {3, {0, 1, 2}, 2},
                                       {4, {0, 1, 2, 3}, 3}, {4, {0, 0, 1, 1}, 2}, {2, {0, 0}, 2}};
  return s;
}

TEST(LowLatencyModel, AcksOnEntryNeverRefillAnUnreadLineNorDeadlock) {
  constexpr int kLines = 7;
  int runs = 0;
  for (const Shape& s : shapes())
    for (std::uint32_t seed = 1; seed <= 150; ++seed) {
      LowLatencyModel model(s.ranks, s.device_of_rank, s.blocks, kLines, Acks::on_entry);
      const std::string bad = model.run(random_calls(s.ranks, kLines, 24, seed), seed * 7919);
      ASSERT_EQ(bad, "") << s.ranks << " ranks, " << s.blocks << " blocks, seed " << seed;
      ++runs;
    }
  EXPECT_EQ(runs, 900);
}

// Two-shot allreduces alone, counts from 1 group (shares of most ranks empty) up, on five ranks too (shares of unequal
// size): no line is written twice in a launch, every load gets the value meant for it, nothing deadlocks.
TEST(LowLatencyModel, TwoShotAllreducesWriteEachLineOnceAndReadTheirOwn) {
  constexpr int kLines = 11;
  std::vector<Shape> all = shapes();
  all.push_back({5, {0, 1, 2, 3, 4}, 2});
  all.push_back({5, {0, 0, 0, 1, 1}, 3});
  for (const Shape& s : all)
    for (std::uint32_t seed = 1; seed <= 100; ++seed) {
      std::vector<Call> calls = random_calls(s.ranks, kLines, 24, seed);
      for (Call& c : calls) c.kind = kTwoShotAllReduce;
      LowLatencyModel model(s.ranks, s.device_of_rank, s.blocks, kLines, Acks::on_entry);
      ASSERT_EQ(model.run(calls, seed * 104729), "") << s.ranks << " ranks, " << s.blocks << " blocks, seed " << seed;
    }
}

// Acks at the end of a block were enough while every call had the same count (block b of the sender refills only
// lines block b of the receiver read)...
TEST(LowLatencyModel, AcksAtTheEndHeldForOneCount) {
  constexpr int kLines = 7;
  for (const Shape& s : shapes())
    for (std::uint32_t seed = 1; seed <= 100; ++seed) {
      std::vector<Call> calls = random_calls(s.ranks, kLines, 24, seed);
      for (Call& c : calls) c.groups = 5;
      LowLatencyModel model(s.ranks, s.device_of_rank, s.blocks, kLines, Acks::at_end);
      ASSERT_EQ(model.run(calls, seed * 7919), "") << s.ranks << " ranks, " << s.blocks << " blocks, seed " << seed;
    }
}

// ... but not when counts change between calls: a broadcast's root may refill lines that a straggling block of the
// receiver, other than the one whose ack it waited for, has not read yet.
TEST(LowLatencyModel, AcksAtTheEndLetMixedCountsRefillUnreadLines) {
  constexpr int kLines = 7;
  std::vector<Call> calls(24);  // two launches (one of each parity) of 2 groups, then two of 7, ...
  for (std::size_t i = 0; i < calls.size(); ++i) calls[i] = Call{kBroadcast, 0, i % 4 < 2 ? 2 : 7};
  int caught = 0;
  std::string example;
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    LowLatencyModel model(2, {0, 1}, 3, kLines, Acks::at_end);
    const std::string bad = model.run(calls, seed);
    if (!bad.empty() && caught++ == 0) example = bad;
  }
  EXPECT_GT(caught, 0) << "the model never caught the hazard";
  EXPECT_NE(example.find("before it was read"), std::string::npos) << example;
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {  // the same calls with acks on entry
    LowLatencyModel model(2, {0, 1}, 3, kLines, Acks::on_entry);
    ASSERT_EQ(model.run(calls, seed), "") << "seed " << seed;
  }
}

}  // namespace
}  // namespace canopy
