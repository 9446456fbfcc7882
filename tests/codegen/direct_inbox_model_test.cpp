// A host model of the direct inbox kernels' flow control (templates/direct_inbox.cuh), as low_latency_model_test.cpp
// is of the LL protocol's: every block of every rank is a state machine over host memory (the inboxes, the
// "entered" and "done" counters), stepped one counter access or one element store or load at a time in a seeded
// random order, some blocks straggling; a device starts launch e + 1 only when all its blocks of launch e are done
// (stream order), while the other devices may lag. Launches mix collectives, roots and counts (each count cuts the
// slots into other block parts and other slot offsets), and a block's part moves whole or in pieces (Config::kPiece:
// store piece 0 and post it; then for each piece k wait for the peers' piece k, store piece k + 1, move piece k, post
// piece k + 1). Checked: no store lands in an inbox element before its owner has read what the launch before put
// there, nothing deadlocks, and every output element is right. Leaving out the wait for the receivers' "entered",
// or waiting for the piece before the one moved, must be caught, or the model's passes mean nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace canopy {
namespace {

enum Kind { kBroadcast, kReduce, kAllReduce, kAllGather, kReduceScatter };

struct Call {
  Kind kind = kAllReduce;
  int root = 0;
  std::uint64_t count = 1;
  std::uint64_t piece = 0;  // the launch's kernel's Config::kPiece (elements; 0: whole parts)
};

constexpr std::uint64_t kVec = 4;  // elements per 16-byte vector (f32)

bool sends(const Call& c, int me, int peer) {  // inbox_sends
  if (me == peer) return false;
  if (c.kind == kBroadcast) return me == c.root;
  if (c.kind == kReduce) return peer == c.root;
  return true;
}

double input(int launch, int rank, std::uint64_t j) {
  return static_cast<double>((launch * 31 + rank * 7 + j * 3) % 17);
}

// A block's element range [first, last) of a slot of `n` elements, as the kernel cuts it.
std::pair<std::uint64_t, std::uint64_t> part(std::uint64_t n, int b, int blocks) {
  const std::uint64_t vectors = n / kVec;
  const std::uint64_t first = vectors * b / blocks * kVec;
  const std::uint64_t last = b + 1 == blocks ? n : vectors * (b + 1) / blocks * kVec;
  return {first, last};
}

struct Cell {
  double value = 0;
  int written = 0;  // launch that stored it (0: none)
  int read = 0;     // launch that last read it
};

class InboxModel {
 public:
  // piece: elements per piece (a multiple of kVec; 0: whole parts) for every call that names none (Call::piece).
  // wait_entered, piece_lag, epoch_marks: the mutations the model must catch (no wait for "entered"; each piece moved
  // after waiting for the piece before it only; a whole part's "done" word the bare epoch, as before 2026-11-27).
  InboxModel(int ranks, std::vector<int> device_of_rank, int blocks, bool wait_entered, std::uint64_t piece = 0,
             bool piece_lag = false, bool epoch_marks = false)
      : ranks_(ranks),
        blocks_(blocks),
        wait_entered_(wait_entered),
        piece_(piece),
        piece_lag_(piece_lag),
        epoch_marks_(epoch_marks),
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
  enum class Act { store, post, await, move };
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

  Block make_block(const Call& c, int e, int me, int b) {
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
        if (sends(x.c, q, x.me)) entered_[q][x.me * blocks_ + x.b] = x.e;
      x.entered = true;
      return Step::progressed;
    }
    if (!x.waited) {
      if (wait_entered_)
        for (int q = 0; q < ranks_; ++q)
          if (sends(x.c, x.me, q) && entered_[x.me][q * blocks_ + x.b] < static_cast<std::uint64_t>(x.e))
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
          if (sends(x.c, x.me, q)) done_[q][x.me * blocks_ + x.b] = mark(x.c, x.e, a.k);
        return advance();
      case Act::await: {
        const std::uint64_t want = piece_lag_ && a.k > 0 ? mark(x.c, x.e, a.k - 1) : mark(x.c, x.e, a.k);
        for (int q = 0; q < ranks_; ++q)
          if (sends(x.c, q, x.me) && done_[x.me][q * blocks_ + x.b] < want) return Step::blocked;
        return advance();
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

  // Element j of every slot this rank reads, combined or copied as the kernel's step 4 does, against the inputs.
  void check_element(const Block& x, std::uint64_t j) {
    const Call& c = x.c;
    auto read = [&](int source) {
      Cell& got = cell(x.me, source, c, j);
      got.read = x.e;
      if (got.written != x.e && failure_.empty())
        failure_ = "launch " + std::to_string(x.e) + ": rank " + std::to_string(x.me) + " read element " +
                   std::to_string(j) + " of its slot " + std::to_string(source) + " stored by launch " +
                   std::to_string(got.written);
      return got.value;
    };
    auto expect = [&](double got, double want, const char* what) {
      if (got != want && failure_.empty())
        failure_ = "launch " + std::to_string(x.e) + ": rank " + std::to_string(x.me) + " " + what + " element " +
                   std::to_string(j) + " is " + std::to_string(got) + ", expected " + std::to_string(want);
    };
    switch (c.kind) {
      case kBroadcast:
        if (x.me != c.root) expect(read(c.root), input(x.e, c.root, j), "broadcast");
        return;
      case kAllGather:
        for (int q = 0; q < ranks_; ++q)
          if (q != x.me) expect(read(q), input(x.e, q, j), "allgather");
        return;
      case kReduce:
        if (x.me != c.root) return;
        [[fallthrough]];
      case kAllReduce:
      case kReduceScatter: {
        const std::uint64_t at = c.kind == kReduceScatter ? static_cast<std::uint64_t>(x.me) * c.count : 0;
        double sum = 0, want = 0;
        for (int q = 0; q < ranks_; ++q) {
          sum += q == x.me ? input(x.e, x.me, at + j) : read(q);
          want += input(x.e, q, at + j);
        }
        expect(sum, want, "reduction");
        return;
      }
    }
  }

  int ranks_, blocks_;
  bool wait_entered_;
  std::uint64_t piece_;
  bool piece_lag_;
  bool epoch_marks_;
  std::vector<int> device_of_rank_;
  std::vector<std::vector<Cell>> inbox_;             // per rank: a slot per source
  std::vector<std::vector<std::uint64_t>> entered_;  // per rank: (peer, block)
  std::vector<std::vector<std::uint64_t>> done_;
  std::string failure_;
};

std::vector<Call> mixed_calls(int ranks, int launches, std::mt19937_64& rng) {
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
std::vector<Call> in_pieces_where_one_way(std::vector<Call> calls) {
  for (Call& c : calls) c.piece = c.kind == kBroadcast || c.kind == kReduce ? kVec : 0;
  return calls;
}

// `rounds` rounds of 12 mixed calls (passed through `shape`, where given) on 2, 3 and 4 ranks, on a device each and
// all on one, in a model whose calls that name no piece move in `piece`: "" or the first failure and where.
std::string mixed_rounds(std::mt19937_64& rng, int rounds, std::uint64_t piece,
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

TEST(DirectInboxModel, MixedCallsDeliverEveryElementWithoutOverwritingAnUnreadOne) {
  std::mt19937_64 rng(20261126);
  EXPECT_EQ(mixed_rounds(rng, 20, 0), "");
}

// The same with each block's part in pieces of one and of two vectors (counts up to 101 over 3 blocks: up to 9
// pieces a block, a short last one).
TEST(DirectInboxModel, InPiecesEveryElementArrivesAndNoUnreadOneIsOverwritten) {
  std::mt19937_64 rng(20261127);
  for (std::uint64_t piece : {kVec, 2 * kVec}) EXPECT_EQ(mixed_rounds(rng, 12, piece), "") << "pieces of " << piece;
}

TEST(DirectInboxModel, LaunchesInPiecesAndWholeMixedShareTheDoneWords) {
  std::mt19937_64 rng(20261128);
  EXPECT_EQ(mixed_rounds(rng, 20, 0, in_pieces_where_one_way), "");
}

// With the bare epoch as a whole part's "done" word, a whole launch after one in pieces finds the words of the
// launch before (the epoch times 2^32) already past its own epoch and moves its inbox before the peers stored
// into it: the wrong allreduce results two H200s showed after reduces in pieces (2026-11-27).
TEST(DirectInboxModel, WholePartsMarkedByTheEpochAloneAfterPiecesAreCaught) {
  std::mt19937_64 rng(13);
  int caught = 0;
  for (int round = 0; round < 40; ++round) {
    InboxModel model(2, {0, 1}, 2, /*wait_entered=*/true, 0, false, /*epoch_marks=*/true);
    std::vector<Call> calls;
    for (int k = 0; k < 4; ++k) {
      calls.push_back(Call{kReduce, 0, 64, kVec});
      calls.push_back(Call{kAllReduce, 0, 64, 0});
    }
    if (!model.run(calls, rng).empty()) ++caught;
  }
  EXPECT_GT(caught, 0) << "a whole launch's done word already reached by a launch in pieces went unnoticed";
}

// Moving piece k after waiting only for piece k - 1 reads elements the peer has not stored yet.
TEST(DirectInboxModel, MovingAPieceBeforeItsDoneWordIsCaught) {
  std::mt19937_64 rng(11);
  int caught = 0;
  for (int round = 0; round < 40; ++round) {
    InboxModel model(2, {0, 1}, 2, /*wait_entered=*/true, kVec, /*piece_lag=*/true);
    std::vector<Call> calls(6, Call{kAllReduce, 0, 64});
    if (!model.run(calls, rng).empty()) ++caught;
  }
  EXPECT_GT(caught, 0) << "a piece moved before it arrived went unnoticed";
}

// Without the wait for "entered", a rank that runs ahead stores into an inbox its owner has not read yet.
TEST(DirectInboxModel, StoresWithoutWaitingForEnteredAreCaught) {
  std::mt19937_64 rng(7);
  int caught = 0;
  for (int round = 0; round < 40; ++round) {
    InboxModel model(2, {0, 1}, 2, /*wait_entered=*/false);
    std::vector<Call> calls(10, Call{kAllReduce, 0, 64});
    if (!model.run(calls, rng).empty()) ++caught;
  }
  EXPECT_GT(caught, 0) << "an inbox overwritten before its owner read it went unnoticed";
}

}  // namespace
}  // namespace canopy
