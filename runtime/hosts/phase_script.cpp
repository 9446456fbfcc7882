// The phases of each collective across hosts, as steps (phase_script.hpp). k shards of the elements (shard_range),
// shard s owned in host h by local rank s mod n_h, which is that host's member of rail s.
#include "runtime/hosts/phase_script.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace canopy {

namespace {

using Kind = ScriptStep::Kind;
using Buffer = ScriptRef::Buffer;

ScriptRef send(std::uint64_t offset = 0, int rank = 0) { return {Buffer::send, rank, offset}; }
ScriptRef recv(std::uint64_t offset = 0, int rank = 0) { return {Buffer::recv, rank, offset}; }
ScriptRef scratch(std::uint64_t offset = 0, int rank = 0) { return {Buffer::scratch, rank, offset}; }

struct ScriptWriter {
  const RailLayout& l;
  int process, o, ranks;
  std::uint64_t count;
  ReduceOp op;
  PhaseScript script;

  int host() const { return l.host_of[process]; }
  const std::vector<int>& my_rails() const { return l.rails_of[process]; }
  void add(Kind kind, ScriptRef from, ScriptRef to, std::uint64_t n, int root = 0, int rail = -1) {
    ScriptStep s;
    s.kind = kind;
    s.from = from;
    s.to = to;
    s.count = n;
    s.root = root;
    s.rail = rail;
    script.steps.push_back(s);
  }
  void mark(std::string phase) {
    ScriptStep s;
    s.phase = std::move(phase);
    script.steps.push_back(s);
  }
  // Inside, every non-empty shard of `n` elements at `at` broadcast in place from its owner here.
  void shards_from_owners(ScriptRef at, std::uint64_t n) {
    for (int s = 0; s < l.k; ++s) {
      const ElementRange r = shard_range(n, l.k, s);
      if (r.empty()) continue;
      ScriptRef p = at;
      p.offset += r.begin;
      add(Kind::inside_broadcast, p, p, r.count(), l.local_of[l.owner(host(), s)] * o);
    }
  }
  void divide_each(ScriptRef at, std::uint64_t n) {
    if (op != ReduceOp::avg) return;
    for (int i = 0; i < o; ++i) add(Kind::divide, at, {at.buffer, i, at.offset}, n);
  }

  // Inside allreduce -> per rail, allreduce of shard s in place -> inside, each shard from its owner.
  void allreduce() {
    add(Kind::inside_allreduce, send(), recv(), count);
    mark("inside allreduce");
    for (int s : my_rails()) {
      const ElementRange r = shard_range(count, l.k, s);
      if (!r.empty()) add(Kind::rail_allreduce, recv(r.begin), recv(r.begin), r.count(), 0, s);
    }
    mark("rails allreduce through NCCL");
    shards_from_owners(recv(), count);
    mark("inside broadcast of the shards");
    divide_each(recv(), count);
  }

  // Inside broadcast on the root's host -> per rail, broadcast of shard s from the root host's member -> inside every
  // other host, each shard from its owner.
  void broadcast(int root) {
    const int root_process = root / o, root_host = l.host_of[root_process];
    if (host() == root_host) {
      add(Kind::inside_broadcast, send(), recv(), count, l.local_of[root_process] * o + root % o);
      mark("inside broadcast on the root's host");
    }
    for (int s : my_rails()) {
      const ElementRange r = shard_range(count, l.k, s);
      if (!r.empty()) add(Kind::rail_broadcast, recv(r.begin), recv(r.begin), r.count(), root_host, s);
    }
    mark("rails broadcast through NCCL");
    if (host() != root_host) {
      shards_from_owners(recv(), count);
      mark("inside broadcast of the shards");
    }
  }

  // Inside allreduce into scratch -> per rail, reduce of shard s into the root host's member -> on the root's host,
  // each shard from its owner, and the root's rank copies the result out.
  void reduce(int root) {
    const int root_process = root / o, root_host = l.host_of[root_process];
    script.scratch_per_rank = count;
    add(Kind::inside_allreduce, send(), scratch(), count);
    mark("inside allreduce");
    for (int s : my_rails()) {
      const ElementRange r = shard_range(count, l.k, s);
      if (!r.empty()) add(Kind::rail_reduce, scratch(r.begin), scratch(r.begin), r.count(), root_host, s);
    }
    mark("rails reduce through NCCL");
    if (host() != root_host) return;
    shards_from_owners(scratch(), count);
    if (root_process == process) {
      const int i = root % o;
      add(Kind::copy, scratch(0, i), recv(0, i), count);
      if (op == ReduceOp::avg) add(Kind::divide, recv(0, i), recv(0, i), count);
    }
    mark("inside broadcast of the shards on the root's host");
  }

  // Per rail s, allgather of the blocks of the processes with local rank s (a host without one sends a block nobody
  // keeps) -> inside, each rail's blocks from its owner -> every rank copies the blocks to their places.
  // Scratch per own rank: k rails x H blocks; own rank 0's part also holds this process's block (o > 1).
  void allgather() {
    const int hosts = l.host_count();
    const std::uint64_t block = count * o, gathered = block * hosts, blocks = gathered * l.k;
    script.scratch_per_rank = blocks + (o > 1 ? block : 0);
    ScriptRef mine = send();
    if (o > 1) {
      for (int i = 0; i < o; ++i) add(Kind::copy, send(0, i), scratch(blocks + i * count), count);
      mine = scratch(blocks);
    }
    for (int s : my_rails()) add(Kind::rail_allgather, mine, scratch(gathered * s), block, 0, s);
    mark("rails allgather through NCCL");
    for (int s = 0; s < l.k; ++s)
      add(Kind::inside_broadcast, scratch(gathered * s), scratch(gathered * s), gathered,
          l.local_of[l.owner(host(), s)] * o);
    mark("inside broadcast of the rails' blocks");
    for (int i = 0; i < o; ++i)
      for (int s = 0; s < l.k; ++s)
        for (int h = 0; h < hosts; ++h)
          if (const int p = l.exact(h, s); p >= 0)
            add(Kind::copy, scratch(gathered * s + block * h, i), recv(block * p, i), block);
    mark("copies into place");
  }

  // Inside allreduce of the whole input into scratch -> per rail s, the H blocks of the processes with local rank s
  // (host order, zeros where a host has none) reduce-scattered -> the process with local rank s keeps its block.
  // Scratch per own rank: the whole input's reduction; own rank 0's part also the rail's blocks and its result.
  void reduce_scatter() {
    const int hosts = l.host_count();
    const std::uint64_t block = count * o, whole = count * ranks;
    const std::uint64_t staged = whole, out = whole + block * hosts;
    script.scratch_per_rank = whole + block * hosts + block;
    add(Kind::inside_allreduce, send(), scratch(), whole);
    mark("inside allreduce");
    add(Kind::zero, scratch(staged), scratch(staged), block * hosts);
    for (int s : my_rails()) {
      for (int h = 0; h < hosts; ++h)
        if (const int p = l.exact(h, s); p >= 0)
          add(Kind::copy, scratch(block * p), scratch(staged + block * h), block);
      add(Kind::rail_reduce_scatter, scratch(staged), scratch(out), block, 0, s);
      if (s != l.local_of[process]) continue;  // only rail local's block is this process's own
      for (int i = 0; i < o; ++i) add(Kind::copy, scratch(out + i * count), recv(0, i), count);
    }
    mark("rails reduce-scatter through NCCL");
    divide_each(recv(), count);
  }
};

const char* name(Kind k) {
  switch (k) {
    case Kind::inside_allreduce: return "inside allreduce";
    case Kind::inside_broadcast: return "inside broadcast";
    case Kind::rail_allreduce: return "rail allreduce";
    case Kind::rail_broadcast: return "rail broadcast";
    case Kind::rail_reduce: return "rail reduce";
    case Kind::rail_allgather: return "rail allgather";
    case Kind::rail_reduce_scatter: return "rail reduce-scatter";
    case Kind::copy: return "copy";
    case Kind::zero: return "zero";
    case Kind::divide: return "divide";
    case Kind::mark: return "mark";
  }
  return "?";
}

std::string ref_text(const ScriptRef& r) {
  const char* b = r.buffer == Buffer::send ? "send" : r.buffer == Buffer::recv ? "recv" : "scratch";
  return fmt::format("{}[{}]+{}", b, r.rank, r.offset);
}

}  // namespace

PhaseScript make_phase_script(const RailLayout& layout, int process, int own_ranks, int ranks, Collective collective,
                              std::uint64_t count, int root, ReduceOp op) {
  ScriptWriter b{layout, process, own_ranks, ranks, count, op, {}};
  if (count == 0) return b.script;
  switch (collective) {
    case Collective::allreduce: b.allreduce(); break;
    case Collective::broadcast: b.broadcast(root); break;
    case Collective::reduce: b.reduce(root); break;
    case Collective::allgather: b.allgather(); break;
    case Collective::reducescatter: b.reduce_scatter(); break;
  }
  return b.script;
}

bool pipelines(Collective collective) {
  return collective == Collective::allreduce || collective == Collective::broadcast ||
         collective == Collective::reduce;
}

PhaseScript make_pipelined_script(const RailLayout& layout, int process, int own_ranks, int ranks,
                                  Collective collective, std::uint64_t count, int root, ReduceOp op, int pieces) {
  if (pieces <= 1 || !pipelines(collective) || count < 2)
    return make_phase_script(layout, process, own_ranks, ranks, collective, count, root, op);
  // Each piece's phases: the steps up to and including each mark.
  std::vector<std::vector<std::vector<ScriptStep>>> phases;
  PhaseScript out;
  for (int p = 0; p < pieces; ++p) {
    const ElementRange r = shard_range(count, pieces, p);
    if (r.empty()) continue;
    const PhaseScript piece = make_phase_script(layout, process, own_ranks, ranks, collective, r.count(), root, op);
    const int index = static_cast<int>(phases.size());
    std::vector<std::vector<ScriptStep>>& mine = phases.emplace_back(1);
    for (ScriptStep step : piece.steps) {
      step.from.offset += r.begin;  // elementwise: every buffer, the scratch included, at the range's place
      step.to.offset += r.begin;
      step.piece = index;
      step.stage = static_cast<int>(mine.size()) - 1;
      mine.back().push_back(step);
      if (step.kind == Kind::mark) mine.emplace_back();
    }
    if (mine.back().empty()) mine.pop_back();
    // The whole call's scratch: reduce's is one element per element (the pieces' ranges tile it).
    if (piece.scratch_per_rank > 0) out.scratch_per_rank = count;
  }
  const int n = static_cast<int>(phases.size());
  out.pieces = n;
  int stages = 0;
  for (const auto& piece : phases) stages = std::max(stages, static_cast<int>(piece.size()));
  for (int t = 0; t < n + stages - 1; ++t)
    for (int p = std::min(t, n - 1); p >= 0 && t - p < stages; --p)
      if (t - p < static_cast<int>(phases[p].size()))
        for (const ScriptStep& step : phases[p][t - p]) out.steps.push_back(step);
  return out;
}

std::vector<StreamStep> plan_streams(const PhaseScript& script) {
  const int pieces = script.pieces;
  // Per piece and phase: rail steps in it (its stream), any step at all (whether it orders anything).
  std::vector<std::vector<char>> rails(pieces), busy(pieces);
  for (const ScriptStep& st : script.steps) {
    if (static_cast<int>(rails[st.piece].size()) <= st.stage) {
      rails[st.piece].resize(st.stage + 1, 0);
      busy[st.piece].resize(st.stage + 1, 0);
    }
    if (st.rail >= 0) rails[st.piece][st.stage] = 1;
    if (st.kind != Kind::mark) busy[st.piece][st.stage] = 1;
  }
  std::vector<int> last(pieces, 0);         // the stream of the piece's last phase with steps
  std::vector<char> recorded(pieces, 0);    // its event holds that phase's end
  std::vector<StreamStep> out;
  out.reserve(script.steps.size());
  for (const ScriptStep& st : script.steps) {
    StreamStep a;
    a.stream = rails[st.piece][st.stage] ? 1 : 0;
    if (st.kind == Kind::mark) {
      if (busy[st.piece][st.stage]) {
        a.record = true;
        recorded[st.piece] = 1;
        last[st.piece] = a.stream;
      }
    } else {
      // The first phase waits for nothing beyond the call's start; an event never recorded is not waited on.
      a.wait = last[st.piece] != a.stream && recorded[st.piece];
      last[st.piece] = a.stream;
    }
    out.push_back(a);
  }
  return out;
}

std::string to_string(const ScriptStep& s) {
  if (s.kind == Kind::mark) return "mark " + s.phase;
  std::string t = fmt::format("{} {} -> {} count {}", name(s.kind), ref_text(s.from), ref_text(s.to), s.count);
  if (s.piece > 0 || s.stage > 0) t += fmt::format(" (piece {} phase {})", s.piece, s.stage);
  if (s.rail >= 0) t += fmt::format(" rail {}", s.rail);
  if (s.kind == Kind::inside_broadcast || s.kind == Kind::rail_broadcast || s.kind == Kind::rail_reduce)
    t += fmt::format(" root {}", s.root);
  return t;
}

}  // namespace canopy
