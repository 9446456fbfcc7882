// The phases across hosts (runtime/hosts/phase_script.hpp) run on host arrays: every process's script is stepped
// as its stream would issue it, each collective step executed once every member of its communicator (the host's
// processes, or the rail's) has reached it, as the inside communicator and NCCL would; a step no member can pass is a
// deadlock. Every output element is compared with the collective's definition, on even, uneven and interleaved hosts,
// one and two ranks per process, every collective, root and operator, in place and out of place. Unwritten memory
// holds 1e300, so reading it shows up in any result.
#include "runtime/hosts/phase_script.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace canopy {
namespace {

using Kind = ScriptStep::Kind;
constexpr double kUnwritten = 1e300;

double combine(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::prod: return a * b;
    case ReduceOp::max: return std::max(a, b);
    case ReduceOp::min: return std::min(a, b);
    default: return a + b;
  }
}

double input(ReduceOp op, int rank, std::uint64_t j) {
  if (op == ReduceOp::prod) return 1 + static_cast<double>((rank + j) % 3);
  if (op == ReduceOp::max || op == ReduceOp::min) return static_cast<double>((rank * 7 + j * 13) % 101);
  return rank * 1000.0 + static_cast<double>(j);
}

struct World {
  RailLayout layout;
  int o = 1, ranks = 0;
  Collective collective = Collective::allreduce;
  std::uint64_t count = 0;
  int pieces = 1;  // make_pipelined_script's
  int root = 0;
  ReduceOp op = ReduceOp::sum;
  bool in_place = false;
  std::uint64_t send_count = 0, recv_count = 0;
  std::vector<std::vector<std::vector<double>>> memory;  // [process][own rank]: send and receive buffers
  std::vector<std::vector<double>> scratch;              // [process]
  std::vector<PhaseScript> scripts;
  std::string failure;

  int rank_of(int p, int i) const { return p * o + i; }
  std::uint64_t send_base(int p, int i) const {
    if (!in_place) return 0;
    return collective == Collective::allgather ? count * rank_of(p, i) : 0;
  }
  std::uint64_t recv_base(int p, int i) const {
    if (!in_place) return send_count;
    return collective == Collective::reducescatter ? count * rank_of(p, i) : 0;
  }
  double* at(int p, const ScriptRef& r, int i, std::uint64_t n) {
    std::vector<double>& v = r.buffer == ScriptRef::Buffer::scratch ? scratch[p] : memory[p][i];
    std::uint64_t start = r.offset;
    std::uint64_t limit = v.size();
    if (r.buffer == ScriptRef::Buffer::scratch) {
      start += i * scripts[p].scratch_per_rank;
      limit = (i + 1) * scripts[p].scratch_per_rank;
    } else if (r.buffer == ScriptRef::Buffer::send) {
      start += send_base(p, i);
      limit = send_base(p, i) + send_count;
    } else {
      start += recv_base(p, i);
      limit = recv_base(p, i) + recv_count;
    }
    if (start + n > limit) {
      if (failure.empty())
        failure = fmt::format("process {} rank {}: {} elements at {} pass the buffer's end", p, i, n, start);
      static std::vector<double> dummy;
      dummy.assign(n, 0);
      return dummy.data();
    }
    return v.data() + start;
  }

  void set_up() {
    const int processes = static_cast<int>(layout.host_of.size());
    ranks = processes * o;
    const bool rs = collective == Collective::reducescatter, ag = collective == Collective::allgather;
    send_count = rs ? count * ranks : count;
    recv_count = ag ? count * ranks : count;
    const std::uint64_t size = in_place ? std::max(send_count, recv_count) : send_count + recv_count;
    memory.assign(processes, std::vector<std::vector<double>>(o, std::vector<double>(size, kUnwritten)));
    for (int p = 0; p < processes; ++p) {
      scripts.push_back(make_pipelined_script(layout, p, o, ranks, collective, count, root, op, pieces));
      scratch.emplace_back(scripts[p].scratch_per_rank * o, kUnwritten);
      for (int i = 0; i < o; ++i)
        for (std::uint64_t j = 0; j < send_count; ++j) memory[p][i][send_base(p, i) + j] = input(op, rank_of(p, i), j);
    }
  }

  // Executes a collective step reached by every member (in their order: local ranks, or host order for a rail).
  void collective_step(const std::vector<int>& members, const std::vector<const ScriptStep*>& steps, bool inside) {
    const ScriptStep& first = *steps[0];
    const std::uint64_t n = first.count;
    const ReduceOp phase_op = op == ReduceOp::avg ? ReduceOp::sum : op;
    std::vector<std::pair<int, int>> who;  // (process, own rank) of every member rank
    std::vector<const ScriptStep*> step_of;
    for (std::size_t m = 0; m < members.size(); ++m)
      for (int i = 0; i < (inside ? o : 1); ++i) {
        who.emplace_back(members[m], inside ? i : steps[m]->from.rank);
        step_of.push_back(steps[m]);
      }
    const auto from = [&](std::size_t k, std::uint64_t offset, std::uint64_t len) {
      ScriptRef r = step_of[k]->from;
      r.offset += offset;
      const double* d = at(who[k].first, r, who[k].second, len);
      return std::vector<double>(d, d + len);
    };
    const auto to = [&](std::size_t k, std::uint64_t offset, std::uint64_t len) {
      ScriptRef r = step_of[k]->to;
      r.offset += offset;
      return at(who[k].first, r, inside ? who[k].second : step_of[k]->to.rank, len);
    };
    const auto reduce_all = [&](std::uint64_t offset) {
      std::vector<double> acc = from(0, offset, n);
      for (std::size_t k = 1; k < who.size(); ++k) {
        const std::vector<double> x = from(k, offset, n);
        for (std::uint64_t j = 0; j < n; ++j) acc[j] = combine(phase_op, acc[j], x[j]);
      }
      return acc;
    };
    switch (first.kind) {
      case Kind::inside_allreduce:
      case Kind::rail_allreduce: {
        const std::vector<double> acc = reduce_all(0);
        for (std::size_t k = 0; k < who.size(); ++k) std::copy(acc.begin(), acc.end(), to(k, 0, n));
        break;
      }
      case Kind::inside_broadcast:
      case Kind::rail_broadcast: {
        const std::vector<double> data = from(static_cast<std::size_t>(first.root), 0, n);
        for (std::size_t k = 0; k < who.size(); ++k) std::copy(data.begin(), data.end(), to(k, 0, n));
        break;
      }
      case Kind::rail_reduce: {
        const std::vector<double> acc = reduce_all(0);
        std::copy(acc.begin(), acc.end(), to(static_cast<std::size_t>(first.root), 0, n));
        break;
      }
      case Kind::rail_allgather: {
        std::vector<std::vector<double>> blocks;
        for (std::size_t k = 0; k < who.size(); ++k) blocks.push_back(from(k, 0, n));
        for (std::size_t k = 0; k < who.size(); ++k)
          for (std::size_t h = 0; h < blocks.size(); ++h)
            std::copy(blocks[h].begin(), blocks[h].end(), to(k, h * n, n));
        break;
      }
      case Kind::rail_reduce_scatter: {
        std::vector<std::vector<double>> results;
        for (std::size_t h = 0; h < who.size(); ++h) results.push_back(reduce_all(h * n));
        for (std::size_t h = 0; h < who.size(); ++h) std::copy(results[h].begin(), results[h].end(), to(h, 0, n));
        break;
      }
      default: failure = "not a collective step";
    }
  }

  void local_step(int p, const ScriptStep& s) {
    double* dst = at(p, s.to, s.to.rank, s.count);
    if (s.kind == Kind::copy) {
      const double* src = at(p, s.from, s.from.rank, s.count);
      std::vector<double> data(src, src + s.count);
      std::copy(data.begin(), data.end(), dst);
    } else if (s.kind == Kind::zero) {
      std::fill(dst, dst + s.count, 0.0);
    } else if (s.kind == Kind::divide) {
      for (std::uint64_t j = 0; j < s.count; ++j) dst[j] /= ranks;
    }
  }

  // Steps every process until all are done; false (and `failure`) on a deadlock.
  bool run() {
    const int processes = static_cast<int>(scripts.size());
    std::vector<std::size_t> pc(processes, 0);
    for (;;) {
      bool progress = false, done = true;
      for (int p = 0; p < processes; ++p) {
        const std::vector<ScriptStep>& steps = scripts[p].steps;
        while (pc[p] < steps.size()) {
          const ScriptStep& s = steps[pc[p]];
          if (s.kind == Kind::copy || s.kind == Kind::zero || s.kind == Kind::divide || s.kind == Kind::mark) {
            local_step(p, s);
            ++pc[p];
            progress = true;
            continue;
          }
          const bool inside = s.kind == Kind::inside_allreduce || s.kind == Kind::inside_broadcast;
          const std::vector<int>& members = inside ? layout.members[layout.host_of[p]] : layout.rails[s.rail];
          std::vector<const ScriptStep*> there;
          for (int q : members) {
            if (pc[q] >= scripts[q].steps.size()) break;
            const ScriptStep& t = scripts[q].steps[pc[q]];
            const bool t_inside = t.kind == Kind::inside_allreduce || t.kind == Kind::inside_broadcast;
            if (t.kind != s.kind || t_inside != inside || (!inside && t.rail != s.rail)) break;
            if (t.count != s.count || t.root != s.root) {
              failure = fmt::format("processes {} and {} disagree on {}: '{}' against '{}'", p, q,
                                    inside ? "an inside step" : "a rail step", to_string(s), to_string(t));
              return false;
            }
            there.push_back(&t);
          }
          if (there.size() != members.size()) break;  // waits for the others
          collective_step(members, there, inside);
          for (int q : members) ++pc[q];
          progress = true;
        }
        if (pc[p] < steps.size()) done = false;
      }
      if (done) return failure.empty();
      if (!progress) {
        std::string at;
        for (int p = 0; p < processes; ++p)
          if (pc[p] < scripts[p].steps.size()) at += fmt::format(" p{}: {};", p, to_string(scripts[p].steps[pc[p]]));
        failure = "deadlock:" + at;
        return false;
      }
    }
  }

  // The first wrong output element, or "".
  std::string check() const {
    const int processes = static_cast<int>(scripts.size());
    for (int p = 0; p < processes; ++p)
      for (int i = 0; i < o; ++i) {
        const int r = rank_of(p, i);
        if (collective == Collective::reduce && r != root) continue;
        for (std::uint64_t j = 0; j < recv_count; ++j) {
          double want = 0;
          if (collective == Collective::broadcast) {
            want = input(op, root, j);
          } else if (collective == Collective::allgather) {
            want = input(op, static_cast<int>(j / count), j % count);
          } else {
            const std::uint64_t e = collective == Collective::reducescatter ? r * count + j : j;
            const ReduceOp phase_op = op == ReduceOp::avg ? ReduceOp::sum : op;
            want = input(op, 0, e);
            for (int q = 1; q < ranks; ++q) want = combine(phase_op, want, input(op, q, e));
            if (op == ReduceOp::avg) want /= ranks;
          }
          const double got = memory[p][i][recv_base(p, i) + j];
          if (std::abs(got - want) > 1e-9 * std::max(1.0, std::abs(want)))
            return fmt::format("rank {} element {}: {} instead of {}", r, j, got, want);
        }
      }
    return "";
  }
};

struct Case {
  std::vector<std::string> hosts;
  int own_ranks;
};

// Whether the pieces of `script` touch disjoint elements of every buffer: the runtime orders one piece's phases (the
// same stream, or an event between the streams), but two pieces may run at once on the two streams.
std::string pieces_overlap(const PhaseScript& script) {
  struct Span {
    int piece;
    std::uint64_t begin, end;
  };
  std::map<std::pair<int, int>, std::vector<Span>> touched;  // (buffer, rank) -> spans
  for (const ScriptStep& st : script.steps) {
    if (st.kind == Kind::mark) continue;
    for (const ScriptRef* r : {&st.from, &st.to}) {
      auto& spans = touched[{static_cast<int>(r->buffer), r->rank}];
      for (const Span& o : spans)
        if (o.piece != st.piece && r->offset < o.end && o.begin < r->offset + st.count)
          return fmt::format("piece {} ({}) and piece {} touch the same elements", st.piece, to_string(st), o.piece);
      spans.push_back({st.piece, r->offset, r->offset + st.count});
    }
  }
  return "";
}

// Whether plan_streams orders every phase of a piece after the piece's earlier phases, on two simulated streams: each
// stream runs its steps in issue order, a wait comes after the last record of its piece's event issued before it (an
// event never recorded may not be waited on), a mark's record after what its stream ran before it.
std::string phases_unordered(const PhaseScript& script, const std::vector<StreamStep>& plan) {
  const std::size_t n = script.steps.size();
  std::vector<std::vector<std::size_t>> next(n);  // i -> j: j runs after i
  long last_on[2] = {-1, -1};
  std::map<int, std::size_t> event;  // piece -> the step whose record it holds
  for (std::size_t i = 0; i < n; ++i) {
    const ScriptStep& st = script.steps[i];
    const int s = plan[i].stream;
    if (last_on[s] >= 0) next[last_on[s]].push_back(i);
    if (plan[i].wait) {
      if (!event.count(st.piece))
        return fmt::format("step {} ({}) waits for an event never recorded", i, to_string(st));
      next[event[st.piece]].push_back(i);
    }
    if (plan[i].record) event[st.piece] = i;
    last_on[s] = static_cast<long>(i);
  }
  for (std::size_t a = 0; a < n; ++a) {
    if (script.steps[a].kind == Kind::mark) continue;
    std::vector<char> seen(n, 0);
    std::vector<std::size_t> todo = {a};
    while (!todo.empty()) {
      const std::size_t i = todo.back();
      todo.pop_back();
      for (std::size_t j : next[i])
        if (!seen[j]) seen[j] = 1, todo.push_back(j);
    }
    for (std::size_t b = 0; b < n; ++b) {
      const ScriptStep &x = script.steps[a], &y = script.steps[b];
      if (y.kind != Kind::mark && y.piece == x.piece && y.stage > x.stage && !seen[b])
        return fmt::format("'{}' may run before '{}' of the same piece's earlier phase", to_string(y), to_string(x));
    }
  }
  return "";
}

// One call on the simulated world of `c`: "" when every process's steps pair up, no two pieces share memory and every
// output element is right; else what and why.
std::string run_call(const Case& c, Collective coll, ReduceOp op, std::uint64_t count, int root, bool in_place,
                     int pieces = 1) {
  World w;
  w.layout = make_rail_layout(c.hosts);
  w.o = c.own_ranks;
  w.collective = coll;
  w.count = count;
  w.pieces = pieces;
  w.root = root;
  w.op = op;
  w.in_place = in_place;
  w.set_up();
  const std::string what = fmt::format("{} {} count {} in {} piece(s) root {} {} on hosts {} x {} ranks",
                                       to_string(coll), to_string(op), count, pieces, root,
                                       in_place ? "in place" : "out of place", fmt::join(c.hosts, ","), c.own_ranks);
  for (const PhaseScript& script : w.scripts) {
    if (const std::string overlap = pieces_overlap(script); !overlap.empty()) return what + ": " + overlap;
    if (pieces > 1)
      if (const std::string order = phases_unordered(script, plan_streams(script)); !order.empty())
        return what + ": " + order;
  }
  if (!w.run()) return what + ": " + w.failure;
  if (const std::string wrong = w.check(); !wrong.empty()) return what + ": " + wrong;
  return "";
}

TEST(PhaseScript, EveryCollectiveIsRightOnEvenUnevenAndInterleavedHosts) {
  const std::vector<Case> cases = {{{"a", "a", "b", "b"}, 1}, {{"a", "b", "b", "c"}, 1}, {{"a", "a", "a", "b"}, 1},
                                   {{"x", "y", "x", "x"}, 1}, {{"a", "b"}, 1},           {{"a", "a", "b"}, 2},
                                   {{"a", "b", "b", "c"}, 2}};
  const Collective collectives[] = {Collective::allreduce, Collective::broadcast, Collective::reduce,
                                    Collective::allgather, Collective::reducescatter};
  int runs = 0;
  for (const Case& c : cases)
    for (Collective coll : collectives)
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg}) {
        if ((coll == Collective::broadcast || coll == Collective::allgather) && op != ReduceOp::sum) continue;
        for (std::uint64_t count : {1ull, 2ull, 7ull, 1028ull})
          for (bool in_place : {false, true}) {
            const int ranks = static_cast<int>(c.hosts.size()) * c.own_ranks;
            const bool rooted = coll == Collective::broadcast || coll == Collective::reduce;
            for (int root = 0; root < (rooted ? ranks : 1); ++root) {
              ASSERT_EQ(run_call(c, coll, op, count, root, in_place), "");
              ++runs;
            }
          }
      }
  std::printf("%d calls checked element by element\n", runs);
}

// Cut into pieces (CANOPY_HOSTS_PIECE_BYTES), the elementwise collectives stay right, every process's steps, in their
// wavefront order, still pair up across the host's processes and each rail's members, and no two pieces share memory.
TEST(PhaseScript, PipelinedPiecesAreRightAndPairUp) {
  const std::vector<Case> cases = {{{"a", "a", "b", "b"}, 1}, {{"a", "b", "b", "c"}, 1}, {{"x", "y", "x", "x"}, 1},
                                   {{"a", "a", "b"}, 2}};
  int runs = 0;
  for (const Case& c : cases)
    for (Collective coll : {Collective::allreduce, Collective::broadcast, Collective::reduce})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::avg}) {
        if (coll == Collective::broadcast && op != ReduceOp::sum) continue;
        for (std::uint64_t count : {2ull, 7ull, 1028ull})
          for (int pieces : {2, 3, 5})
            for (bool in_place : {false, true}) {
              const int ranks = static_cast<int>(c.hosts.size()) * c.own_ranks;
              const bool rooted = coll != Collective::allreduce;
              for (int root = 0; root < (rooted ? ranks : 1); ++root) {
                ASSERT_EQ(run_call(c, coll, op, count, root, in_place, pieces), "");
                ++runs;
              }
            }
      }
  std::printf("%d pipelined calls checked element by element\n", runs);
}

// The wavefront: piece p + 1's inside allreduce is issued before piece p's inside broadcasts (so it runs while piece
// p's rails do), the rails stay in piece order, every step is tagged with its piece and phase, and the pieces tile
// the call.
TEST(PhaseScript, PiecesAreIssuedAsAWavefront) {
  const RailLayout l = make_rail_layout({"a", "a", "b", "b"});
  const PhaseScript s = make_pipelined_script(l, 0, 1, 4, Collective::allreduce, 3000, 0, ReduceOp::sum, 3);
  std::vector<std::string> order;
  std::uint64_t inside_elements = 0;
  for (const ScriptStep& st : s.steps) {
    if (st.kind == Kind::mark) continue;
    order.push_back(fmt::format("{}{}", st.kind == Kind::inside_allreduce   ? "A"
                                        : st.kind == Kind::rail_allreduce   ? "R"
                                        : st.kind == Kind::inside_broadcast ? "B"
                                                                            : "?",
                                st.piece));
    if (st.kind == Kind::inside_allreduce) {
      EXPECT_EQ(st.stage, 0);
      EXPECT_EQ(st.from.offset, inside_elements);
      inside_elements += st.count;
    }
    if (st.kind == Kind::rail_allreduce) {
      EXPECT_EQ(st.stage, 1);
    }
  }
  EXPECT_EQ(inside_elements, 3000u);
  // Process 0 owns shard 0 of each piece (rail 0); each piece's two shards are broadcast from their owners.
  EXPECT_EQ(fmt::format("{}", fmt::join(order, " ")), "A0 A1 R0 A2 R1 B0 B0 R2 B1 B1 B2 B2");
  EXPECT_EQ(pieces_overlap(s), "");
  const std::vector<StreamStep> plan = plan_streams(s);
  EXPECT_EQ(phases_unordered(s, plan), "");
  // The rails on the second stream, each waiting for its piece's inside allreduce; the rest on the first.
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    if (s.steps[i].kind == Kind::mark) continue;
    EXPECT_EQ(plan[i].stream, s.steps[i].kind == Kind::rail_allreduce ? 1 : 0) << to_string(s.steps[i]);
    if (s.steps[i].kind == Kind::rail_allreduce) {
      EXPECT_TRUE(plan[i].wait);
    }
  }
  std::vector<StreamStep> no_waits = plan;  // without the waits the rails could outrun the inside phase: caught
  for (StreamStep& a : no_waits) a.wait = false;
  EXPECT_THAT(phases_unordered(s, no_waits), ::testing::HasSubstr("may run before"));
  // One piece, or a collective that does not pipeline: the plain script.
  EXPECT_EQ(make_pipelined_script(l, 0, 1, 4, Collective::allgather, 3000, 0, ReduceOp::sum, 3).steps.size(),
            make_phase_script(l, 0, 1, 4, Collective::allgather, 3000, 0, ReduceOp::sum).steps.size());
}

TEST(PhaseScript, ACountOfZeroIsNoStepAndAvgEndsWithTheDivision) {
  const RailLayout l = make_rail_layout({"a", "b", "b", "c"});
  EXPECT_TRUE(make_phase_script(l, 0, 1, 4, Collective::allreduce, 0, 0, ReduceOp::sum).steps.empty());
  const PhaseScript s = make_phase_script(l, 1, 1, 4, Collective::allreduce, 7, 0, ReduceOp::avg);
  ASSERT_FALSE(s.steps.empty());
  EXPECT_EQ(s.steps.back().kind, Kind::divide);
  EXPECT_EQ(to_string(s.steps.front()), "inside allreduce send[0]+0 -> recv[0]+0 count 7");
  // Process 0 (host a, alone) is on both rails: two NCCL allreduces, one per shard of 4 and 3 elements.
  const PhaseScript a = make_phase_script(l, 0, 1, 4, Collective::allreduce, 7, 0, ReduceOp::sum);
  std::vector<std::string> rails;
  for (const ScriptStep& st : a.steps)
    if (st.kind == Kind::rail_allreduce) rails.push_back(to_string(st));
  EXPECT_EQ(rails, (std::vector<std::string>{"rail allreduce recv[0]+0 -> recv[0]+0 count 4 rail 0",
                                             "rail allreduce recv[0]+4 -> recv[0]+4 count 3 rail 1"}));
}

}  // namespace
}  // namespace canopy
