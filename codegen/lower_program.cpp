// Lowering a collective-algorithm program to a Schedule: statements cut to chunks, their dependences, fusion,
// lanes per (rank, channel), counters between lanes, scratch rings and the launch handshakes (lower_program.hpp).
#include "codegen/lower_program.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "codegen/lower.hpp"
#include "core/sha256.hpp"
#include "dsl/algorithm_check.hpp"
#include "core/error.hpp"

namespace canopy {
namespace {

using algo::Buffer;
using algo::OpKind;
using algo::Program;

struct Slot {
  int rank = 0;
  Buffer buffer = Buffer::input;
  int index = 0;
  auto operator<=>(const Slot&) const = default;
};

std::string slot_text(const Slot& s) { return algo::to_string(algo::ChunkRef{s.rank, s.buffer, s.index, 1}); }

// One statement cut to one chunk.
struct Unit {
  OpKind kind = OpKind::copy;
  Slot src, dst;
  int executor = 0;  // the rank whose thread blocks run it
  int channel = 0;
  int step = 0;       // position in its channel's order on the executor (the hint, else program order)
  int statement = 0;  // index in program.ops()
  int line = 0;
};

std::string unit_text(const Unit& u) {
  return fmt::format("line {} ({} {} -> {})", u.line, u.kind == OpKind::copy ? "copy" : "reduce", slot_text(u.src),
                     slot_text(u.dst));
}

// Statements cut to chunks, in program order, with their executor and channel position. A statement's position
// counts, as the checker does, the statements before it on that rank and channel.
std::vector<Unit> split_units(const Program& p) {
  std::vector<Unit> units;
  std::map<std::pair<int, int>, int> position;  // (rank, channel) -> statements so far
  for (int k = 0; k < static_cast<int>(p.ops().size()); ++k) {
    const algo::Op& op = p.ops()[k];
    Unit u;
    u.kind = op.kind;
    u.executor = op.kind == OpKind::copy ? op.src.rank : op.dst.rank;
    u.channel = op.hints.channel;
    u.statement = k;
    u.line = op.line;
    for (int r : std::set<int>{op.src.rank, op.dst.rank}) {
      const int at = position[{r, op.hints.channel}]++;
      if (r == u.executor) u.step = op.hints.step.value_or(at);
    }
    for (int j = 0; j < op.src.count; ++j) {
      u.src = Slot{op.src.rank, op.src.buffer, op.src.index + j};
      u.dst = Slot{op.dst.rank, op.dst.buffer, op.dst.index + j};
      units.push_back(u);
    }
  }
  return units;
}

// Dependences in program order: for every unit, the earlier units it must follow (read after write, write after
// read, write after write on one chunk); and the unit that last wrote its source (-1: an input).
struct Dependences {
  std::vector<std::set<int>> before;
  std::vector<int> source_writer;
};

Dependences dependences(const std::vector<Unit>& units) {
  Dependences d;
  d.before.resize(units.size());
  d.source_writer.assign(units.size(), -1);
  std::map<Slot, int> last_writer;
  std::map<Slot, std::vector<int>> readers;  // since the last write
  for (int k = 0; k < static_cast<int>(units.size()); ++k) {
    const Unit& u = units[k];
    if (auto w = last_writer.find(u.src); w != last_writer.end()) d.before[k].insert(d.source_writer[k] = w->second);
    if (auto w = last_writer.find(u.dst); w != last_writer.end()) d.before[k].insert(w->second);
    for (int r : readers[u.dst])
      if (r != k) d.before[k].insert(r);
    readers[u.dst].clear();
    last_writer[u.dst] = k;
    if (!(u.src == u.dst)) readers[u.src].push_back(k);
  }
  return d;
}

// A fused step: its first unit (a copy or reduce) and the copies that forward that unit's result.
struct Group {
  std::vector<int> units;
  int executor = 0, channel = 0;
  std::vector<Slot> sources() const;
};

// Groups of units. With `fuse`, a copy joins the group whose result it reads when both run on one rank and channel,
// it writes none of the group's operands, and everything else it waits for comes before the group in program
// order (so running it at the group's place reorders nothing that matters).
std::vector<Group> group_units(const std::vector<Unit>& units, const Dependences& deps, bool fuse,
                               std::vector<int>& group_of) {
  std::vector<Group> groups;
  group_of.assign(units.size(), -1);
  for (int k = 0; k < static_cast<int>(units.size()); ++k) {
    const Unit& u = units[k];
    int target = -1;
    if (fuse && u.kind == OpKind::copy && deps.source_writer[k] >= 0) {
      const int g = group_of[deps.source_writer[k]];
      const Group& G = groups[g];
      const Unit& first = units[G.units.front()];
      bool ok = G.executor == u.executor && G.channel == u.channel;
      for (int m : G.units) ok = ok && !(units[m].dst == u.dst) && !(units[m].src == u.dst);
      ok = ok && !(first.kind == OpKind::reduce && first.dst == u.dst);
      for (int p : deps.before[k]) ok = ok && (group_of[p] == g || p < G.units.front());
      if (ok) target = g;
    }
    if (target < 0) {
      target = static_cast<int>(groups.size());
      groups.push_back(Group{{}, u.executor, u.channel});
    }
    groups[target].units.push_back(k);
    group_of[k] = target;
  }
  return groups;
}

// The group graph: dependences between groups and each lane's order. `lanes` lists each (executor, channel)'s
// groups in channel order. Returns the groups in a topological order, or empty when there is a cycle (then
// `cycle` names its units).
struct GroupGraph {
  std::vector<std::set<int>> before;  // group -> groups it depends on (data), any lane
  std::vector<int> lane_of, lane_prev;
  std::map<std::pair<int, int>, std::vector<int>> lanes;
  std::vector<int> order;
};

GroupGraph group_graph(const std::vector<Unit>& units, const Dependences& deps, const std::vector<Group>& groups,
                       const std::vector<int>& group_of, std::string* cycle) {
  const int n = static_cast<int>(groups.size());
  GroupGraph g;
  g.before.resize(n);
  for (int k = 0; k < static_cast<int>(units.size()); ++k)
    for (int p : deps.before[k])
      if (group_of[p] != group_of[k]) g.before[group_of[k]].insert(group_of[p]);
  for (int x = 0; x < n; ++x) g.lanes[{groups[x].executor, groups[x].channel}].push_back(x);
  g.lane_of.assign(n, -1);
  g.lane_prev.assign(n, -1);
  int lane = 0;
  for (auto& [key, list] : g.lanes) {
    std::stable_sort(list.begin(), list.end(), [&](int a, int b) {
      const Unit& ua = units[groups[a].units.front()];
      const Unit& ub = units[groups[b].units.front()];
      return std::tie(ua.step, ua.statement) < std::tie(ub.step, ub.statement);
    });
    for (std::size_t i = 0; i < list.size(); ++i) {
      g.lane_of[list[i]] = lane;
      if (i > 0) g.lane_prev[list[i]] = list[i - 1];
    }
    ++lane;
  }
  std::vector<std::vector<int>> after(n);
  std::vector<int> indegree(n, 0);
  auto edge = [&](int from, int to) { after[from].push_back(to), ++indegree[to]; };
  for (int x = 0; x < n; ++x) {
    for (int p : g.before[x]) edge(p, x);
    if (g.lane_prev[x] >= 0) edge(g.lane_prev[x], x);
  }
  for (int x = 0; x < n; ++x)
    if (indegree[x] == 0) g.order.push_back(x);
  for (std::size_t i = 0; i < g.order.size(); ++i)
    for (int w : after[g.order[i]])
      if (--indegree[w] == 0) g.order.push_back(w);
  if (static_cast<int>(g.order.size()) == n) return g;
  // A cycle among the groups left: walk predecessors that are still left until one repeats.
  std::vector<int> left_pred(n, -1);
  for (int x = 0; x < n; ++x)
    if (indegree[x] > 0)
      for (int w : after[x])
        if (indegree[w] > 0) left_pred[w] = x;
  int x = 0;
  while (indegree[x] == 0) ++x;
  std::vector<int> seen(n, -1), path;
  while (seen[x] < 0) seen[x] = static_cast<int>(path.size()), path.push_back(x), x = left_pred[x];
  std::vector<std::string> parts;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    parts.push_back(unit_text(units[groups[*it].units.front()]));
    if (*it == x) break;
  }
  *cycle = fmt::format("{}", fmt::join(parts, " -> "));
  g.order.clear();
  return g;
}

std::string program_text(const Program& p) {
  std::string text =
      fmt::format("program {} goal {} ranks {} chunks {} root {} input {} output {}\n", p.name(), p.goal(), p.ranks(),
                  p.chunks(), p.root(), p.buffer_chunks(Buffer::input), p.buffer_chunks(Buffer::output));
  for (const algo::Op& op : p.ops())
    text += fmt::format("{} {} -> {} channel {} step {} line {}\n", op.kind == OpKind::copy ? "copy" : "reduce",
                        algo::to_string(op.src), algo::to_string(op.dst), op.hints.channel,
                        op.hints.step ? fmt::format("{}", *op.hints.step) : "-", op.line);
  return text;
}

}  // namespace

std::string program_key(const Program& p) { return Sha256().update(program_text(p)).hex_digest(); }

void check_program_shape(const Program& p, const CodegenOptions& options) {
  const int n = p.ranks();
  if (n > kMaxCodegenRanks)
    throw Error(
        fmt::format("algorithm '{}' has {} ranks; generated kernels take every rank's addresses as launch "
                    "arguments, which fit {} ranks at most",
                    p.name(), n, kMaxCodegenRanks));
  check_codegen_options(options, n);
}

std::vector<int> program_lanes_of_ranks(const Program& p) {
  const int n = p.ranks();
  std::vector<std::set<int>> channels(std::max(0, n));
  for (const algo::Op& op : p.ops()) {
    const int executor = op.kind == OpKind::copy ? op.src.rank : op.dst.rank;  // as split_units assigns it
    if (op.src.count > 0 && executor >= 0 && executor < n) channels[executor].insert(op.hints.channel);
  }
  std::vector<int> lanes;
  for (const std::set<int>& c : channels) lanes.push_back(std::max<int>(1, static_cast<int>(c.size())));
  return lanes;
}

int program_lane_blocks(const std::vector<int>& lanes_of_ranks, int blocks_per_rank) {
  int most = 1;
  for (int lanes : lanes_of_ranks) most = std::max(most, lanes);
  return std::max(1, blocks_per_rank / most);
}

Schedule lower_program(const Program& p, const CodegenOptions& options, const Topology& topology,
                       const std::vector<std::string>& rank_names) {
  count_lowering();
  const int n = p.ranks();
  check_program_shape(p, options);
  std::vector<NodeId> gpus = topology.gpu_ids();
  if (!rank_names.empty()) {
    if (static_cast<int>(rank_names.size()) != n)
      throw Error(
          fmt::format("algorithm '{}' is written for {} ranks but {} GPUs were given for them ({}): build it "
                      "for {} ranks",
                      p.name(), n, rank_names.size(), fmt::join(rank_names, ", "), rank_names.size()));
    gpus.clear();
    for (const std::string& name : rank_names) {
      const std::optional<NodeId> id = topology.find(name);
      if (!id || topology.node(*id).kind != NodeKind::gpu)
        throw Error(
            fmt::format("algorithm '{}': rank GPU '{}' is not a GPU of topology {}", p.name(), name, topology.name()));
      gpus.push_back(*id);
    }
  }
  if (const std::vector<algo::Diagnostic> problems = algo::check_program(p, &topology, &gpus); !problems.empty()) {
    std::vector<std::string> lines;
    for (const algo::Diagnostic& d : problems) lines.push_back(algo::to_string(d, p.name()));
    throw Error(fmt::format("algorithm '{}' does not verify on {}, so it is not lowered:\n{}", p.name(),
                            topology.name(), fmt::join(lines, "\n")));
  }

  Schedule s;
  s.plan.collective = p.collective().value_or(Collective::allreduce);  // unused: s.program says what runs
  s.plan.topology = topology.name();
  for (int r = 0; r < n; ++r) s.plan.ranks.push_back(topology.node(gpus[r]).name);
  s.options = options;
  s.options.pull = PullEdges::none;
  s.ranks = n;
  if (s.options.device_of_rank.empty()) s.options.device_of_rank = block_placement(n, n);
  const std::vector<int>& device = s.options.device_of_rank;

  // Passes 1-2: dependences and fusion (fusion is dropped if it would make the channel order cyclic).
  const std::vector<Unit> units = split_units(p);
  const Dependences deps = dependences(units);
  std::vector<int> group_of;
  std::vector<Group> groups = group_units(units, deps, /*fuse=*/true, group_of);
  std::string cycle;
  GroupGraph graph = group_graph(units, deps, groups, group_of, &cycle);
  if (graph.order.empty() && !groups.empty()) {
    groups = group_units(units, deps, /*fuse=*/false, group_of);
    graph = group_graph(units, deps, groups, group_of, &cycle);
    if (graph.order.empty())
      throw Error(
          fmt::format("algorithm '{}': the channel order of these statements (their step hints) runs "
                      "against the order their data needs, so their thread blocks would wait on each other "
                      "forever: {}; reorder the steps",
                      p.name(), cycle));
  }
  const int G = static_cast<int>(groups.size());

  // Reachability between groups (bit m of reach[x]: x happens before m), for dropping implied waits.
  const std::size_t words = (static_cast<std::size_t>(G) + 63) / 64;
  std::vector<std::vector<std::uint64_t>> reach(G, std::vector<std::uint64_t>(words, 0));
  auto reaches = [&](int x, int m) { return (reach[x][m / 64] >> (m % 64)) & 1; };
  {
    std::vector<std::vector<int>> after(G);
    for (int x = 0; x < G; ++x) {
      for (int q : graph.before[x]) after[q].push_back(x);
      if (graph.lane_prev[x] >= 0) after[graph.lane_prev[x]].push_back(x);
    }
    for (auto it = graph.order.rbegin(); it != graph.order.rend(); ++it)
      for (int w : after[*it]) {
        reach[*it][w / 64] |= std::uint64_t{1} << (w % 64);
        for (std::size_t i = 0; i < words; ++i) reach[*it][i] |= reach[w][i];
      }
  }

  // Pass 3: lanes. Every lane has the same number of blocks, so block l of every lane works on part l of every
  // chunk and counters pair block l with block l.
  const std::vector<int> lanes_of_ranks = program_lanes_of_ranks(p);
  std::map<int, int> lane_count;
  for (const auto& [key, list] : graph.lanes) ++lane_count[key.first];
  for (int r = 0; r < n; ++r)
    CANOPY_INTERNAL_ASSERT(lanes_of_ranks[r] == std::max(1, lane_count[r]), "a rank's lanes miscounted");
  const int blocks = program_lane_blocks(lanes_of_ranks, s.options.blocks_per_rank);
  std::map<std::pair<int, int>, int> lane_id;  // (executor, channel) -> lane
  std::vector<int> first_lane(n, -1);
  s.resources.assign(n, {});
  auto add_lane = [&](int rank, int channel) {
    Lane lane;
    lane.id = static_cast<int>(s.lanes.size());
    lane.tree = -1;
    lane.channel = channel;
    lane.blocks = blocks;
    lane.rank = rank;
    lane.range.units = p.chunks();
    s.lanes.push_back(lane);
    if (first_lane[rank] < 0) first_lane[rank] = lane.id;
    return lane.id;
  };
  for (int r = 0; r < n; ++r) {
    for (const auto& [key, list] : graph.lanes)
      if (key.first == r) lane_id[key] = add_lane(r, key.second);
    if (first_lane[r] < 0) add_lane(r, -1);  // no statements: it still owns memory others touch
  }
  auto lane_of_group = [&](int x) { return lane_id.at({groups[x].executor, groups[x].channel}); };

  // Counters: L consecutive per flag (one per block).
  auto new_flag = [&](int rank) {
    const int base = s.resources[rank].flag_count;
    s.resources[rank].flag_count += blocks;
    return base;
  };
  std::map<std::pair<int, int>, int> done_flag;  // (group, waiting rank) -> counter at that rank
  std::map<int, std::vector<FlagRef>> signals;   // group -> counters it raises after each chunk
  std::map<int, std::pair<int, std::size_t>> signal_at;  // group -> (lane, per-chunk index) of its signal step
  auto done = [&](int x, int waiter) {
    auto [it, fresh] = done_flag.emplace(std::pair{x, waiter}, 0);
    if (fresh) {
      it->second = new_flag(waiter);
      signals[x].push_back({waiter, it->second});
    }
    return FlagRef{waiter, it->second};
  };

  // Operands: inputs are send buffers, outputs receive buffers, scratch chunks rings of fifo_depth slices.
  std::map<Slot, std::int64_t> scratch_offset;
  for (const Unit& u : units)
    for (const Slot& sl : {u.src, u.dst})
      if (sl.buffer == Buffer::scratch) scratch_offset[sl] = 0;
  for (auto& [sl, offset] : scratch_offset) {
    offset = s.resources[sl.rank].scratch_bytes;
    s.resources[sl.rank].scratch_bytes += s.fifo_bytes() * blocks;
  }
  auto operand = [&](const Slot& sl) {
    BufferRef b;
    b.rank = sl.rank;
    if (sl.buffer == Buffer::scratch) {
      b.kind = BufferKind::fifo;
      b.fifo_offset = scratch_offset.at(sl);
    } else {
      b.kind = sl.buffer == Buffer::input ? BufferKind::send : BufferKind::recv;
      b.unit = sl.index;
    }
    return b;
  };

  // Which other devices' ranks each group touches; who touches each rank (the launch handshakes).
  std::vector<std::set<int>> remote(G);
  std::map<int, std::set<int>> touched_by;  // owner rank -> groups of other devices touching its memory
  for (int x = 0; x < G; ++x)
    for (int k : groups[x].units)
      for (const Slot& sl : {units[k].src, units[k].dst})
        if (device[sl.rank] != device[groups[x].executor]) remote[x].insert(sl.rank), touched_by[sl.rank].insert(x);
  std::map<std::pair<int, int>, int> entered;  // (toucher rank, owner rank) -> counter at the toucher
  for (int x = 0; x < G; ++x)
    for (int y : remote[x])
      if (!entered.count({groups[x].executor, y})) entered[{groups[x].executor, y}] = new_flag(groups[x].executor);

  // Scratch reuse across slices: a group writing a scratch chunk waits until the last accesses of that chunk (in
  // other lanes; its own lane runs slices in order) have finished the slice `fifo_depth` earlier, which used the
  // same ring slot.
  std::map<Slot, std::set<int>> accessors;
  for (int x = 0; x < G; ++x)
    for (int k : groups[x].units)
      for (const Slot& sl : {units[k].src, units[k].dst})
        if (sl.buffer == Buffer::scratch) accessors[sl].insert(x);

  // Steps. `reused`: counters that scratch writers wait on for slot reuse, by the lane that raises them; that lane
  // raises them to (e, 0) on entering the launch, which frees every slot for the first fifo_depth slices.
  std::map<int, std::vector<FlagRef>> reused;
  for (int r = 0; r < n; ++r) {  // entering: tell the ranks that touch my memory
    std::vector<FlagRef> flags;
    std::set<int> ranks;
    for (const auto& [key, index] : entered)
      if (key.second == r) flags.push_back({key.first, index}), ranks.insert(key.first);
    if (flags.empty()) continue;
    std::vector<std::string> names;
    for (int q : ranks) names.push_back(s.plan.ranks[q]);
    s.lanes[first_lane[r]].prologue.push_back(signal_step(
        flags, true, fmt::format("my buffers are free for this launch: {} may use them", fmt::join(names, ", "))));
  }
  for (const auto& [key, list] : graph.lanes) {
    Lane& lane = s.lanes[lane_id.at(key)];
    std::set<int> owners;
    for (int x : list) owners.insert(remote[x].begin(), remote[x].end());
    for (int y : owners)
      lane.prologue.push_back(wait_step({lane.rank, entered.at({lane.rank, y})}, WaitTarget::epoch,
                                      fmt::format("{} has entered this launch", s.plan.ranks[y])));
    for (int x : list) {
      const std::vector<int>& members = groups[x].units;
      const Unit& first = units[members.front()];
      // Data: wait for the groups of other lanes this one needs, except those another wait already implies.
      std::vector<int> needs;
      for (int q : graph.before[x])
        if (lane_of_group(q) != lane.id && !(graph.lane_prev[x] >= 0 && reaches(q, graph.lane_prev[x])))
          needs.push_back(q);
      for (int q : needs) {
        bool implied = false;
        for (int o : needs) implied = implied || (o != q && reaches(q, o));
        if (!implied)
          lane.per_chunk.push_back(
              wait_step(done(q, lane.rank), WaitTarget::chunk,
                      fmt::format("{} has finished chunk i", unit_text(units[groups[q].units.front()]))));
      }
      // Scratch slots this group writes: their last users of the same ring slot, in other lanes.
      std::set<int> users;
      for (int k : members) {
        if (units[k].dst.buffer != Buffer::scratch) continue;
        const std::set<int>& acc = accessors.at(units[k].dst);
        for (int a : acc) {
          bool last = true;
          for (int b : acc) last = last && !(a != b && reaches(a, b));
          if (last && a != x && lane_of_group(a) != lane.id) users.insert(a);
        }
      }
      for (int a : users) {
        reused[lane_of_group(a)].push_back(done(a, lane.rank));
        lane.per_chunk.push_back(wait_step(
            done(a, lane.rank), WaitTarget::slot_free,
            fmt::format("{} is done with the scratch slot chunk i reuses", unit_text(units[groups[a].units.front()]))));
      }
      lane.per_chunk.push_back(step_of(StepKind::sync));
      Step move = step_of(StepKind::reduce_copy);
      move.sources = {operand(first.kind == OpKind::reduce ? first.dst : first.src)};
      if (first.kind == OpKind::reduce) move.sources.push_back(operand(first.src));
      std::vector<std::string> what;
      for (int k : members) move.destinations.push_back(operand(units[k].dst)), what.push_back(unit_text(units[k]));
      move.note = fmt::format("{}", fmt::join(what, ", "));
      lane.per_chunk.push_back(move);
      // Its signal: the counters are known only once every lane has said what it waits for (filled below).
      signal_at[x] = {lane.id, lane.per_chunk.size()};
      lane.per_chunk.push_back(signal_step({}, false, "chunk i is done"));
    }
  }
  for (auto& [id, flags] : reused) {
    std::sort(flags.begin(), flags.end(),
              [](FlagRef a, FlagRef b) { return std::tie(a.rank, a.index) < std::tie(b.rank, b.index); });
    flags.erase(std::unique(flags.begin(), flags.end()), flags.end());
    s.lanes[id].prologue.push_back(signal_step(flags, true, "my scratch slots are free for this launch"));
  }
  // Exits, then the signals (every counter is known only now): a rank waits until every group of another device
  // that touches its memory is done with the launch's last slice.
  for (const auto& [y, xs] : touched_by)
    for (int x : xs)
      s.lanes[first_lane[y]].epilogue.push_back(
          wait_step(done(x, y), WaitTarget::all,
                  fmt::format("{} on {} has finished with my memory", unit_text(units[groups[x].units.front()]),
                              s.plan.ranks[groups[x].executor])));
  for (const auto& [x, at] : signal_at)
    if (auto it = signals.find(x); it != signals.end()) s.lanes[at.first].per_chunk[at.second].flags = it->second;
  for (Lane& lane : s.lanes)  // groups nothing waits for raise no counter
    std::erase_if(lane.per_chunk, [](const Step& st) { return st.kind == StepKind::signal && st.flags.empty(); });

  ProgramSummary& summary = s.program.emplace();
  summary.name = p.name();
  summary.goal = p.goal();
  summary.chunks = p.chunks();
  summary.input_chunks = p.buffer_chunks(Buffer::input);
  summary.output_chunks = p.buffer_chunks(Buffer::output);
  summary.reduces = p.reduces();
  summary.statements = static_cast<int>(units.size());
  summary.steps = G;
  summary.text = program_text(p);
  place_lanes_on_devices(s);
  return s;
}

}  // namespace canopy
