// A host model of the direct inbox kernels' flow control (templates/direct_inbox.cuh, direct_inbox_two_shot.cuh), as
// low_latency_model_test.cpp is of the LL protocol's, for direct_inbox_model_test.cpp and
// direct_inbox_two_shot_model_test.cpp: every block of every rank is a state machine over host memory (the inboxes, the
// "entered" and "done" counters), stepped one counter access or one element store or load at a time in a seeded
// random order, some blocks straggling; a device starts launch e + 1 only when all its blocks of launch e are done
// (stream order), while the other devices may lag. Launches mix collectives, roots and counts (each count cuts the
// slots into other block parts and other slot offsets), and a block's part moves whole or in pieces (Config::kPiece:
// store piece 0 and post it; then for each piece k wait for the peers' piece k, store piece k + 1, move piece k, post
// piece k + 1), or in two shots (Call::two_shot: store shot A, post it; wait for the peers' shot A, combine my share
// and store it into the inboxes that need it, post shot B; wait for the peers' shot B, move their shares). Checked: no
// store lands in an inbox element before its owner has read what the launch before put there, nothing deadlocks, and
// every output element is right. Leaving out the wait for the receivers' "entered", or waiting for the piece before
// the one moved, must be caught, or the model's passes mean nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/codegen/direct_inbox_calls.hpp"

namespace canopy::inbox_model {

class InboxModel {
 public:
  // piece: elements per piece (a multiple of kVec; 0: whole parts) for every one-shot call that names none
  // (Call::piece). wait_entered, piece_lag, epoch_marks, fault: the mutations the model must catch (no wait for
  // "entered"; each piece moved after waiting for the piece before it only; a whole part's "done" word the bare epoch,
  // as before 2026-11-27; TwoShotFault).
  InboxModel(int ranks, std::vector<int> device_of_rank, int blocks, bool wait_entered, std::uint64_t piece = 0,
             bool piece_lag = false, bool epoch_marks = false, TwoShotFault fault = TwoShotFault::none)
      : ranks_(ranks),
        blocks_(blocks),
        wait_entered_(wait_entered),
        piece_(piece),
        piece_lag_(piece_lag),
        epoch_marks_(epoch_marks),
        fault_(fault),
        device_of_rank_(std::move(device_of_rank)) {}

  // Runs `calls` as launches 1, 2, ...; returns "" or the first failure.
  std::string run(const std::vector<Call>& calls, std::mt19937_64& rng) {
    std::uint64_t most = 1;
    for (const Call& c : calls) most = std::max(most, c.count);
    const std::uint64_t slot_max = (most + kVec - 1) / kVec * kVec;
    inbox_.assign(ranks_, std::vector<Cell>(static_cast<std::size_t>(ranks_ * slot_max)));
    entered_.assign(ranks_, std::vector<std::uint64_t>(static_cast<std::size_t>(ranks_ * blocks_), 0));
    done_ = entered_;
    const int devices = *std::max_element(device_of_rank_.begin(), device_of_rank_.end()) + 1;
    std::vector<int> launch_of_device(devices, 0);  // index into calls of the device's current launch
    std::vector<Block> live;
    auto start = [&](int d) {
      const int k = launch_of_device[d];
      if (k >= static_cast<int>(calls.size())) return;
      for (int r = 0; r < ranks_; ++r)
        if (device_of_rank_[r] == d)
          for (int b = 0; b < blocks_; ++b) {
            live.push_back(make_block(with_piece(calls[k]), k + 1, r, b));
            live.back().slow = rng() % 4 == 0;
          }
    };
    for (int d = 0; d < devices; ++d) start(d);
    std::uint64_t idle = 0;
    while (!live.empty()) {
      const std::size_t i = rng() % live.size();
      if (live[i].slow && rng() % 16 != 0) continue;  // a straggler: it seldom gets a step
      const Step s = step(live[i]);
      if (!failure_.empty()) return failure_;
      idle = s == Step::blocked ? idle + 1 : 0;
      if (idle > 200000) return "deadlock: every live block waits";
      if (s != Step::finished) continue;
      const int d = device_of_rank_[live[i].me];
      const int e = live[i].e;
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      bool device_done = true;
      for (const Block& x : live) device_done = device_done && !(device_of_rank_[x.me] == d && x.e == e);
      if (device_done) {
        ++launch_of_device[d];
        start(d);
      }
    }
    return "";
  }

 private:
  enum class Step { progressed, blocked, finished };
  // A block's script after "entered": what the kernel does, one action after another.
  // combine and collect: the two-shot kernels' own share combined (and stored into the inboxes that need it), and
  // the peers' shares moved out of the inbox.
  enum class Act { store, post, await, move, combine, collect };
  struct Action {
    Act act;
    std::uint64_t k;  // the piece
  };
  struct Store {
    int owner, source;
    std::uint64_t j;  // element of the slot
    double value;
  };
  struct Block {
    Call c;
    int e = 0, me = 0, b = 0;
    bool entered = false, waited = false;
    std::vector<std::vector<Store>> stores;  // per piece
    std::vector<std::pair<std::uint64_t, std::uint64_t>> moves;  // per piece: its elements [first, last)
    std::vector<std::pair<int, std::uint64_t>> collects;          // two-shot: (source, element) moved out
    std::vector<Action> script;
    std::size_t pc = 0;    // the action under way
    std::size_t next = 0;  // within it: the next store, or the next element moved
    bool slow = false;     // a straggler (one block in four): the scheduler seldom steps it
  };

  std::uint64_t slot(const Call& c) const { return (c.count + kVec - 1) / kVec * kVec; }
  Cell& cell(int owner, int source, const Call& c, std::uint64_t j) {
    return inbox_[owner][static_cast<std::size_t>(source * slot(c) + j)];
  }
  Call with_piece(Call c) const {
    if (c.piece == 0) c.piece = piece_;
    return c;
  }
  // inbox_done_mark: the epoch above the pieces posted, whole parts or not, so that every launch's words exceed every
  // earlier launch's, whatever pieces either moved in (launches of collectives in pieces and whole ones share the
  // words). The mutation: the bare epoch for whole parts.
  std::uint64_t mark(const Call& c, int e, std::uint64_t k) const {
    if (epoch_marks_ && c.piece == 0) return static_cast<std::uint64_t>(e);
    return (static_cast<std::uint64_t>(e) << 32) | (k + 1);
  }

  // The two-shot kernel's block: shot A's stores, its own share's part, the peers' shares' parts to collect.
  Block make_two_shot_block(const Call& c, int e, int me, int b) {
    Block x;
    x.c = c, x.e = e, x.me = me, x.b = b;
    const int parts = ranks_ * blocks_;
    bool sends_a = false, sends_b = false, receives_b = false;
    x.stores.emplace_back();
    for (int q = 0; q < ranks_; ++q) {
      const auto [first, last] = part(c.count, q * blocks_ + b, parts);
      sends_a = sends_a || shot_a(c, me, q);
      sends_b = sends_b || shot_b(c, me, q);
      receives_b = receives_b || shot_b(c, q, me);
      for (std::uint64_t j = first; j < last; ++j) {
        if (shot_a(c, me, q)) x.stores.back().push_back({q, me, j, input(e, me, j)});
        if (shot_b(c, q, me)) x.collects.emplace_back(q, j);
      }
    }
    x.moves.push_back(part(c.count, me * blocks_ + b, parts));
    if (sends_a) x.script = {{Act::store, 0}, {Act::post, 0}};
    x.script.push_back({Act::await, 0});
    x.script.push_back({Act::combine, 0});
    if (sends_b) x.script.push_back({Act::post, 1});
    if (receives_b) x.script.insert(x.script.end(), {{Act::await, 1}, {Act::collect, 1}});
    return x;
  }

  Block make_block(const Call& c, int e, int me, int b) {
    if (c.two_shot) return make_two_shot_block(c, e, me, b);
    Block x;
    x.c = c, x.e = e, x.me = me, x.b = b;
    const auto [first, last] = part(c.count, b, blocks_);
    const std::uint64_t len = last - first, piece = c.piece > 0 ? c.piece : std::max<std::uint64_t>(len, 1);
    const std::uint64_t pieces = (len + piece - 1) / piece;
    for (std::uint64_t k = 0; k < pieces; ++k) {
      const std::uint64_t at = first + k * piece, end = std::min(last, at + piece);
      x.stores.emplace_back();
      for (int q = 0; q < ranks_; ++q) {
        if (!sends(c, me, q)) continue;
        const std::uint64_t base = c.kind == kReduceScatter ? static_cast<std::uint64_t>(q) * c.count : 0;
        for (std::uint64_t j = at; j < end; ++j) x.stores.back().push_back({q, me, j, input(e, me, base + j)});
      }
      x.moves.emplace_back(at, end);
    }
    if (pieces > 0) {
      x.script = {{Act::store, 0}, {Act::post, 0}};
      for (std::uint64_t k = 0; k < pieces; ++k) {
        x.script.push_back({Act::await, k});
        if (k + 1 < pieces) x.script.push_back({Act::store, k + 1});
        x.script.push_back({Act::move, k});
        if (k + 1 < pieces) x.script.push_back({Act::post, k + 1});
      }
    }
    return x;
  }

  Step step(Block& x) {
    if (!x.entered) {
      for (int q = 0; q < ranks_; ++q)
        if (into_any(x.c, q, x.me)) entered_[q][x.me * blocks_ + x.b] = x.e;
      x.entered = true;
      return Step::progressed;
    }
    if (!x.waited) {
      if (wait_entered_)
        for (int q = 0; q < ranks_; ++q)
          if (into_any(x.c, x.me, q) && entered_[x.me][q * blocks_ + x.b] < static_cast<std::uint64_t>(x.e))
            return Step::blocked;
      x.waited = true;
      return Step::progressed;
    }
    if (x.pc == x.script.size()) return Step::finished;
    const Action a = x.script[x.pc];
    auto advance = [&] {
      ++x.pc;
      x.next = 0;
      return x.pc == x.script.size() ? Step::finished : Step::progressed;
    };
    switch (a.act) {
      case Act::store: {
        const std::vector<Store>& stores = x.stores[a.k];
        if (x.next == stores.size()) return advance();
        const Store& s = stores[x.next++];
        Cell& cell_ = cell(s.owner, s.source, x.c, s.j);
        if (cell_.written > cell_.read) {
          failure_ = "launch " + std::to_string(x.e) + ": rank " + std::to_string(x.me) + " overwrote element " +
                     std::to_string(s.j) + " of rank " + std::to_string(s.owner) + "'s inbox slot " +
                     std::to_string(s.source) + ", stored by launch " + std::to_string(cell_.written) +
                     " and not read yet";
          return Step::progressed;
        }
        cell_ = {s.value, x.e, cell_.read};
        return Step::progressed;
      }
      case Act::post:
        for (int q = 0; q < ranks_; ++q)
          if (into(x.c, a.k, x.me, q)) done_[q][x.me * blocks_ + x.b] = mark(x.c, x.e, a.k);
        return advance();
      case Act::await: {
        const std::uint64_t want = piece_lag_ && a.k > 0 ? mark(x.c, x.e, a.k - 1) : mark(x.c, x.e, a.k);
        const TwoShotFault skip = a.k == 0 ? TwoShotFault::combine_before_shot_a : TwoShotFault::collect_before_shot_b;
        if (x.c.two_shot && fault_ == skip) return advance();
        for (int q = 0; q < ranks_; ++q)
          if (into(x.c, a.k, q, x.me) && done_[x.me][q * blocks_ + x.b] < want) return Step::blocked;
        return advance();
      }
      case Act::combine: {
        const auto [at, end] = x.moves[0];
        if (at + x.next >= end) return advance();
        combine_element(x, at + x.next++);
        return Step::progressed;
      }
      case Act::collect: {
        if (x.next == x.collects.size()) return advance();
        const auto [q, j] = x.collects[x.next++];
        expect(x, j, read(x, q, j), result(x.c, x.e, j), "collected");
        return Step::progressed;
      }
      case Act::move: {
        const auto [at, end] = x.moves[a.k];
        if (at + x.next >= end) return advance();
        check_element(x, at + x.next++);
        return Step::progressed;
      }
    }
    return Step::finished;
  }

  // Element j of my inbox's slot `source`, marked read; a failure unless this launch stored it.
  double read(const Block& x, int source, std::uint64_t j) {
    Cell& got = cell(x.me, source, x.c, j);
    got.read = x.e;
    if (got.written != x.e && failure_.empty())
      failure_ = "launch " + std::to_string(x.e) + ": rank " + std::to_string(x.me) + " read element " +
                 std::to_string(j) + " of its slot " + std::to_string(source) + " stored by launch " +
                 std::to_string(got.written);
    return got.value;
  }
  void expect(const Block& x, std::uint64_t j, double got, double want, const char* what) {
    if (got != want && failure_.empty())
      failure_ = "launch " + std::to_string(x.e) + ": rank " + std::to_string(x.me) + " " + what + " element " +
                 std::to_string(j) + " is " + std::to_string(got) + ", expected " + std::to_string(want);
  }
  // A two-shot call's element j: the root's input (broadcast) or the sum of every rank's.
  double result(const Call& c, int e, std::uint64_t j) const {
    if (c.kind == kBroadcast) return input(e, c.root, j);
    double sum = 0;
    for (int q = 0; q < ranks_; ++q) sum += input(e, q, j);
    return sum;
  }
  // Two-shot: element j of my share combined from my input and my inbox (broadcast: the root's copy), then stored into
  // slot `me` of every inbox that needs it, each store checked as shot A's are.
  void combine_element(const Block& x, std::uint64_t j) {
    const Call& c = x.c;
    double value = 0;
    if (c.kind == kBroadcast)
      value = x.me == c.root ? input(x.e, c.root, j) : read(x, c.root, j);
    else
      for (int q = 0; q < ranks_; ++q) value += q == x.me ? input(x.e, x.me, j) : read(x, q, j);
    expect(x, j, value, result(c, x.e, j), "combined");
    for (int p = 0; p < ranks_; ++p) {
      if (!shot_b(c, x.me, p)) continue;
      Cell& to = cell(p, x.me, c, j);
      if (to.written > to.read && failure_.empty())
        failure_ = "launch " + std::to_string(x.e) + ": rank " + std::to_string(x.me) + " overwrote element " +
                   std::to_string(j) + " of rank " + std::to_string(p) + "'s inbox slot " + std::to_string(x.me) +
                   " in shot B, stored by launch " + std::to_string(to.written) + " and not read yet";
      to = {value, x.e, to.read};
    }
  }

  // Element j of every slot this rank reads, combined or copied as the kernel's step 4 does, against the inputs.
  void check_element(const Block& x, std::uint64_t j) {
    const Call& c = x.c;
    switch (c.kind) {
      case kBroadcast:
        if (x.me != c.root) expect(x, j, read(x, c.root, j), input(x.e, c.root, j), "broadcast");
        return;
      case kAllGather:
        for (int q = 0; q < ranks_; ++q)
          if (q != x.me) expect(x, j, read(x, q, j), input(x.e, q, j), "allgather");
        return;
      case kReduce:
        if (x.me != c.root) return;
        [[fallthrough]];
      case kAllReduce:
      case kReduceScatter: {
        const std::uint64_t at = c.kind == kReduceScatter ? static_cast<std::uint64_t>(x.me) * c.count : 0;
        double sum = 0, want = 0;
        for (int q = 0; q < ranks_; ++q) {
          sum += q == x.me ? input(x.e, x.me, at + j) : read(x, q, j);
          want += input(x.e, q, at + j);
        }
        expect(x, j, sum, want, "reduction");
        return;
      }
    }
  }

  int ranks_, blocks_;
  bool wait_entered_;
  std::uint64_t piece_;
  bool piece_lag_;
  bool epoch_marks_;
  TwoShotFault fault_;
  std::vector<int> device_of_rank_;
  std::vector<std::vector<Cell>> inbox_;             // per rank: a slot per source
  std::vector<std::vector<std::uint64_t>> entered_;  // per rank: (peer, block)
  std::vector<std::vector<std::uint64_t>> done_;
  std::string failure_;
};

// `rounds` rounds of 12 mixed calls (passed through `shape`, where given) on 2, 3 and 4 ranks, on a device each and
// all on one, in a model whose calls that name no piece move in `piece`: "" or the first failure and where.
inline std::string mixed_rounds(std::mt19937_64& rng, int rounds, std::uint64_t piece,
                         std::vector<Call> (*shape)(std::vector<Call>) = nullptr) {
  for (int ranks : {2, 3, 4})
    for (int devices : {ranks, 1}) {
      std::vector<int> device_of_rank;
      for (int r = 0; r < ranks; ++r) device_of_rank.push_back(r * devices / ranks);
      for (int round = 0; round < rounds; ++round) {
        InboxModel model(ranks, device_of_rank, 3, /*wait_entered=*/true, piece);
        std::vector<Call> calls = mixed_calls(ranks, 12, rng);
        if (shape) calls = shape(std::move(calls));
        if (std::string failure = model.run(calls, rng); !failure.empty())
          return failure + " (" + std::to_string(ranks) + " ranks on " + std::to_string(devices) + " devices, round " +
                 std::to_string(round) + ")";
      }
    }
  return "";
}

}  // namespace canopy::inbox_model
