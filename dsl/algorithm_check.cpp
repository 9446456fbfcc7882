// check_program (see algorithm_check.hpp): symbolic execution in program order, then the order graph (channel order
// plus data dependences) for cycles and unordered conflicting accesses, then the goal's post-condition; and the
// execution and the post-condition on their own (output_contents, expected_output).
#include "dsl/algorithm_check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <variant>

#include "core/error.hpp"

namespace canopy::algo {
namespace {

using Value = Contents;
struct Slot {
  int rank;
  Buffer buffer;
  int index;
  auto operator<=>(const Slot&) const = default;
};

std::string slot_text(const Slot& s) { return fmt::format("rank {} {}[{}]", s.rank, to_string(s.buffer), s.index); }

std::string value_text(const Value& v) {
  if (v.empty()) return "nothing";
  std::vector<std::string> parts;
  for (const auto& [key, n] : v)
    parts.push_back(fmt::format("{}rank {} input[{}]", n > 1 ? fmt::format("{} x ", n) : "", key.first, key.second));
  if (parts.size() > 4)
    return fmt::format("{}, ... ({} inputs)", fmt::join(parts.begin(), parts.begin() + 3, ", "), parts.size());
  return fmt::format("{}", fmt::join(parts, " + "));
}

void check_slot(const Program& p, Buffer buffer, int rank, int index) {
  if (rank < 0 || rank >= p.ranks() || index < 0 || index >= p.buffer_chunks(buffer))
    throw Error(fmt::format(
        "algorithm '{}': rank {} {}[{}] is not a chunk: ranks are 0..{} and a {} {} holds {} chunks", p.name(), rank,
        to_string(buffer), index, p.ranks() - 1, p.goal(), to_string(buffer), p.buffer_chunks(buffer)));
}

// The statements executed on symbolic values in program order: the final values, the data dependences and every
// access per slot. Problems met on the way go to `out` when given.
struct Execution {
  std::map<Slot, Value> state;
  std::map<Slot, int> last_writer;
  std::map<Slot, std::vector<std::pair<int, bool>>> accesses;  // (op, writes)
  std::vector<std::set<int>> depends;                          // op -> ops whose data it reads
};

Execution execute(const Program& p, std::vector<Diagnostic>* out) {
  const std::vector<Op>& ops = p.ops();
  const int n_ops = static_cast<int>(ops.size());
  auto report = [&](int k, std::string message) {
    if (out) out->push_back({ops[k].line, std::move(message)});
  };
  auto op_text = [&](int k) {
    return fmt::format("{} {} -> {}", ops[k].kind == OpKind::copy ? "copy" : "reduce", to_string(ops[k].src),
                       to_string(ops[k].dst));
  };
  Execution x;
  x.depends.resize(n_ops);
  for (int r = 0; r < p.ranks(); ++r)
    for (int i = 0; i < p.buffer_chunks(Buffer::input); ++i)
      if (Value v = input_contents(p, r, i); !v.empty()) x.state[{r, Buffer::input, i}] = std::move(v);
  for (int k = 0; k < n_ops; ++k) {
    const Op& op = ops[k];
    if (op.dst.buffer == Buffer::input) {
      report(k, fmt::format("{} writes an input buffer: inputs are the caller's and stay unchanged; write to output or "
                            "scratch",
                            op_text(k)));
      continue;
    }
    for (int j = 0; j < op.src.count; ++j) {
      const Slot s{op.src.rank, op.src.buffer, op.src.index + j};
      const Slot d{op.dst.rank, op.dst.buffer, op.dst.index + j};
      const Value& from = x.state[s];
      if (from.empty())
        report(k, fmt::format("{} reads {}, which nothing has written yet (inputs hold data; outputs and scratch start "
                              "empty)",
                              op_text(k), slot_text(s)));
      if (op.kind == OpKind::reduce && x.state[d].empty())
        report(k, fmt::format("{} reduces into {}, which nothing has written yet: copy a first contribution there",
                              op_text(k), slot_text(d)));
      for (const Slot& read : op.kind == OpKind::reduce ? std::vector<Slot>{s, d} : std::vector<Slot>{s})
        if (auto w = x.last_writer.find(read); w != x.last_writer.end()) x.depends[k].insert(w->second);
      Value next = op.kind == OpKind::copy ? from : x.state[d];
      if (op.kind == OpKind::reduce)
        for (const auto& [key, count] : from) next[key] += count;
      x.state[d] = next;
      x.last_writer[d] = k;
      x.accesses[s].push_back({k, false});
      x.accesses[d].push_back({k, true});
    }
  }
  return x;
}

}  // namespace

Contents input_contents(const Program& p, int rank, int index) {
  check_slot(p, Buffer::input, rank, index);
  if (const auto* custom = std::get_if<CustomGoal>(&p.spec()); custom && custom->input)
    return custom->input(rank, index);
  return Contents{{{rank, index}, 1}};
}

std::vector<std::vector<Contents>> output_contents(const Program& p) {
  Execution x = execute(p, nullptr);
  std::vector<std::vector<Contents>> out(p.ranks(), std::vector<Contents>(p.buffer_chunks(Buffer::output)));
  for (int r = 0; r < p.ranks(); ++r)
    for (int i = 0; i < p.buffer_chunks(Buffer::output); ++i)
      if (auto it = x.state.find({r, Buffer::output, i}); it != x.state.end()) out[r][i] = std::move(it->second);
  return out;
}

std::optional<Contents> expected_output(const Program& p, int rank, int index) {
  check_slot(p, Buffer::output, rank, index);
  const int n = p.ranks(), c = p.chunks();
  if (const auto* custom = std::get_if<CustomGoal>(&p.spec())) return custom->output(rank, index);
  if (std::holds_alternative<AllToAll>(p.spec()))  // output[q*C+c] of rank r: rank q's input[r*C+c]
    return Value{{{index / c, rank * c + index % c}, 1}};
  Value all;
  switch (std::get<Collective>(p.spec())) {
    case Collective::allreduce:
      for (int q = 0; q < n; ++q) all[{q, index}] = 1;
      return all;
    case Collective::reduce:
      if (rank != p.root()) return std::nullopt;
      for (int q = 0; q < n; ++q) all[{q, index}] = 1;
      return all;
    case Collective::broadcast:
      return Value{{{p.root(), index}, 1}};
    case Collective::allgather:
      return Value{{{index / c, index % c}, 1}};
    case Collective::reducescatter:
      for (int q = 0; q < n; ++q) all[{q, rank * c + index}] = 1;
      return all;
  }
  return std::nullopt;
}

std::string to_string(const Diagnostic& d, const std::string& program) {
  return d.line > 0 ? fmt::format("{}:{}: error: {}", program, d.line, d.message)
                    : fmt::format("{}: error: {}", program, d.message);
}

std::vector<Diagnostic> check_program(const Program& p, const Topology* topology,
                                      const std::vector<NodeId>* rank_gpus) {
  std::vector<Diagnostic> out;
  const std::vector<Op>& ops = p.ops();
  const int n_ops = static_cast<int>(ops.size());
  auto line = [&](int k) { return ops[k].line; };
  auto op_text = [&](int k) {
    return fmt::format("{} {} -> {}", ops[k].kind == OpKind::copy ? "copy" : "reduce", to_string(ops[k].src),
                       to_string(ops[k].dst));
  };

  // Links.
  if (topology) {
    const std::vector<NodeId> gpus = rank_gpus ? *rank_gpus : topology->gpu_ids();
    if (static_cast<int>(gpus.size()) < p.ranks()) {
      out.push_back({0, fmt::format("the program has {} ranks but topology {} has {} GPUs", p.ranks(), topology->name(),
                                    gpus.size())});
      return out;
    }
    std::map<std::pair<int, int>, bool> cache;
    for (int k = 0; k < n_ops; ++k) {
      const int a = ops[k].src.rank, b = ops[k].dst.rank;
      if (a == b) continue;
      auto [it, fresh] = cache.emplace(std::pair{a, b}, false);
      if (fresh) it->second = !switch_path(*topology, gpus[a], gpus[b]).empty();
      if (!it->second)
        out.push_back(
            {line(k), fmt::format("{}: rank {} ({}) has no link to rank {} ({}) in topology {}; only switches "
                                  "may relay between them",
                                  op_text(k), a, topology->node(gpus[a]).name, b, topology->node(gpus[b]).name,
                                  topology->name())});
    }
  }

  // Symbolic execution in program order; data dependences and every access per slot.
  const Execution exec = execute(p, &out);
  const std::vector<std::set<int>>& depends = exec.depends;
  const auto& accesses = exec.accesses;
  const auto& last_writer = exec.last_writer;

  // Order graph: data dependences plus, per rank and channel, the statements touching that rank in channel order.
  std::vector<std::set<int>> after(n_ops);  // edges k -> successors
  for (int k = 0; k < n_ops; ++k)
    for (int d : depends[k]) after[d].insert(k);
  std::map<std::pair<int, int>, std::vector<std::pair<std::pair<int, int>, int>>>
      lanes;  // (rank, channel) -> ((key), op)
  std::map<std::pair<int, int>, int> position;
  for (int k = 0; k < n_ops; ++k) {
    std::set<int> ranks{ops[k].src.rank, ops[k].dst.rank};
    for (int r : ranks) {
      const std::pair<int, int> lane{r, ops[k].hints.channel};
      const int at = position[lane]++;
      lanes[lane].push_back({{ops[k].hints.step.value_or(at), k}, k});
    }
  }
  for (auto& [lane, list] : lanes) {
    std::sort(list.begin(), list.end());
    for (std::size_t i = 0; i + 1 < list.size(); ++i)
      if (list[i].second != list[i + 1].second) after[list[i].second].insert(list[i + 1].second);
  }
  // Cycles (a deadlock): depth-first search for a back edge, reporting the cycle's statements.
  std::vector<int> colour(n_ops, 0), parent(n_ops, -1);
  bool cyclic = false;
  std::function<void(int)> visit = [&](int v) {
    colour[v] = 1;
    for (int w : after[v]) {
      if (cyclic) return;
      if (colour[w] == 1) {
        std::vector<std::string> cycle{fmt::format("line {} ({})", line(w), op_text(w))};
        for (int x = v; x != w && x >= 0; x = parent[x])
          cycle.insert(cycle.begin() + 1, fmt::format("line {} ({})", line(x), op_text(x)));
        out.push_back({line(w), fmt::format("deadlock: these statements wait on each other in a cycle of channel order "
                                            "and data: {} -> back to line {}; reorder the steps",
                                            fmt::join(cycle, " -> "), line(w))});
        cyclic = true;
        return;
      }
      if (colour[w] == 0) parent[w] = v, visit(w);
    }
    colour[v] = 2;
  };
  for (int k = 0; k < n_ops && !cyclic; ++k)
    if (colour[k] == 0) visit(k);

  // Races: conflicting accesses of one slot with no path between them (reachability is quadratic in statements, so
  // very large programs are refused rather than left to exhaust memory).
  constexpr int kMaxRaceCheckOps = 20000;
  if (!cyclic && n_ops > kMaxRaceCheckOps)
    out.push_back({0, fmt::format("{} statements: the race check handles at most {}; split the program or use fewer "
                                  "chunks",
                                  n_ops, kMaxRaceCheckOps)});
  if (!cyclic && n_ops <= kMaxRaceCheckOps) {
    // Topological order (the graph is acyclic here; channel steps may point backwards in program order).
    std::vector<int> indegree(n_ops, 0), order;
    for (int k = 0; k < n_ops; ++k)
      for (int w : after[k]) ++indegree[w];
    for (int k = 0; k < n_ops; ++k)
      if (indegree[k] == 0) order.push_back(k);
    for (std::size_t i = 0; i < order.size(); ++i)
      for (int w : after[order[i]])
        if (--indegree[w] == 0) order.push_back(w);
    // reach[k] bit m: k happens before m (bitsets: 20000 statements take 50 MB).
    const std::size_t words = (static_cast<std::size_t>(n_ops) + 63) / 64;
    std::vector<std::vector<std::uint64_t>> reach(n_ops);
    auto before = [&](int k, int m) { return (reach[k][m / 64] >> (m % 64)) & 1; };
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const int k = *it;
      reach[k].assign(words, 0);
      for (int w : after[k]) {
        reach[k][w / 64] |= std::uint64_t{1} << (w % 64);
        for (std::size_t i = 0; i < words; ++i) reach[k][i] |= reach[w][i];
      }
    }
    std::set<std::pair<int, int>> reported;
    for (const auto& [slot, list] : accesses)
      for (std::size_t i = 0; i < list.size(); ++i)
        for (std::size_t j = i + 1; j < list.size(); ++j) {
          const auto [a, wa] = list[i];
          const auto [b, wb] = list[j];
          if (a == b || !(wa || wb) || before(a, b) || before(b, a) || !reported.insert({a, b}).second) continue;
          out.push_back({line(b), fmt::format("race on {}: line {} ({}) and line {} ({}) {} it with nothing ordering "
                                              "them; put both on one channel or make one read what the other wrote",
                                              slot_text(slot), line(a), op_text(a), line(b), op_text(b),
                                              wa && wb ? "both write" : "read and write")});
        }
  }

  // Post-condition.
  int wrong = 0;
  for (int r = 0; r < p.ranks(); ++r)
    for (int i = 0; i < p.buffer_chunks(Buffer::output); ++i) {
      const std::optional<Value> want = expected_output(p, r, i);
      if (!want) continue;
      const Slot s{r, Buffer::output, i};
      const auto at = exec.state.find(s);
      const Value got = at == exec.state.end() ? Value{} : at->second;
      if (got == *want) continue;
      if (++wrong > 8) continue;
      std::vector<std::string> why;
      for (const auto& [key, count] : *want)
        if (!got.count(key)) why.push_back(fmt::format("rank {}'s input[{}] is missing", key.first, key.second));
      for (const auto& [key, count] : got) {
        if (!want->count(key))
          why.push_back(fmt::format("rank {}'s input[{}] does not belong there", key.first, key.second));
        else if (count > 1)
          why.push_back(fmt::format("rank {}'s input[{}] is reduced in {} times", key.first, key.second, count));
      }
      const auto w = last_writer.find(s);
      out.push_back({w == last_writer.end() ? 0 : line(w->second),
                     fmt::format("{} holds {} but {} promises {}: {}{}", slot_text(s), value_text(got), p.goal(),
                                 value_text(*want), fmt::join(why, "; "),
                                 w == last_writer.end() ? " (nothing writes it)" : " (written last here)")});
    }
  if (wrong > 8) out.push_back({0, fmt::format("... and {} more output chunks are wrong", wrong - 8)});
  return out;
}

}  // namespace canopy::algo
