// Lowering a Plan to a Schedule: the lanes (codegen/tree_lanes.hpp), then every lane's counters, FIFOs and steps (the
// protocol is described atop codegen/schedule.hpp).
#include "codegen/lower.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <map>

#include "codegen/tree_lanes.hpp"
#include "core/error.hpp"
#include "planner/plan_eval.hpp"

namespace canopy {
namespace {

// The counters and FIFOs of one tree across all ranks (base indices: one per block follows each).
struct LaneResources {
  std::vector<int> data;                  // out: data counter at each non-root rank
  std::vector<std::map<int, int>> grant;  // out: at rank r, the grant counter of child c (with FIFOs, also its
                                          // credit: raised as the child drains each slot)
  std::vector<std::map<int, int>> child_data;   // in: at rank r, the data counter of child c
  std::vector<std::map<int, std::int64_t>> fifo;  // in: at rank r, the FIFO offset for child c; out with FIFOs
                                                  // (own_buffers_only): at child r, the offset for its parent
  std::vector<int> credit;                // in: credit counter at each non-root rank
  int progress = -1;                      // in, allreduce: the root's progress counter
  // Pulled edges (CodegenOptions::pull), by (reader, owner): the reader reads the owner's send buffer directly.
  std::map<std::pair<int, int>, int> ready;  // at the reader: the owner has entered this launch
  std::map<std::pair<int, int>, int> done;   // at the owner: the reader has finished reading
};

// Whether the edge between `parent` and `child` of tree t is pulled (CodegenOptions::pull): the receiver reads the
// sender's send buffer, which holds all its data from the start of the launch, instead of the sender pushing
// chunks. That holds for a leaf's input in an in-tree and for the root's input in a broadcast or allgather
// out-tree (an allreduce out-tree's root sends what it is still reducing).
bool is_pulled(const Schedule& s, const TreeShape& shape, int t, int parent, int child) {
  if (s.is_relay(parent) || s.is_relay(child)) return false;  // a relay holds no send buffer and reads none
  if (s.plan.trees[t].direction == TreeDirection::in)
    return pulls_in(s.options.pull) && shape.children[child].empty();
  return pulls_out(s.options.pull) && parent == shape.root && shape.children[child].empty() &&
         s.plan.collective != Collective::allreduce;
}

std::string rank_name(const Schedule& s, int r) { return s.name_of(r); }

// Allreduce: where a rank is the root of exactly one in-tree and one out-tree over the same range with the same
// blocks, the out-tree's root lane only copies, chunk by chunk, what the in-tree's root lane has just reduced. Fused,
// the reducing step writes its result to the out-tree children too (one reduce_copy with several destinations, the
// data read once) and raises their data counters with its own signal; the copying lane goes away.
void fuse_allreduce_roots(Schedule& s) {
  std::vector<bool> removed(s.lanes.size(), false);
  for (const auto& [reducing, copying] : fused_root_lanes(s)) {
    Lane& reducer = s.lanes[reducing];
    Lane& copier = s.lanes[copying];
    auto find = [](std::vector<Step>& steps, StepKind kind) {
      return std::find_if(steps.begin(), steps.end(), [&](const Step& x) { return x.kind == kind; });
    };
    auto reduce = find(reducer.per_chunk, StepKind::reduce_copy);
    auto copy = find(copier.per_chunk, StepKind::reduce_copy);
    CANOPY_INTERNAL_ASSERT(reduce != reducer.per_chunk.end() && copy != copier.per_chunk.end(),
                           "fused allreduce root lanes without their reducing and copying steps");
    // With FIFOs the copier waits for its children's free slots: the fused step must too, before its barrier.
    std::vector<Step> slot_waits;
    for (const Step& step : copier.per_chunk)
      if (step.kind == StepKind::wait && step.target == WaitTarget::slot_free) slot_waits.push_back(step);
    if (!slot_waits.empty()) {
      const auto barrier = find(reducer.per_chunk, StepKind::sync);
      CANOPY_INTERNAL_ASSERT(barrier != reducer.per_chunk.end(), "a reducing root lane without its barrier");
      reducer.per_chunk.insert(barrier, slot_waits.begin(), slot_waits.end());
      reduce = find(reducer.per_chunk, StepKind::reduce_copy);
    }
    reduce->destinations.insert(reduce->destinations.end(), copy->destinations.begin(), copy->destinations.end());
    reduce->note += "; and send it to every out-tree child (fused with tree " + std::to_string(copier.tree) + ")";
    std::vector<FlagRef> data;
    for (const Step& step : copier.per_chunk)
      if (step.kind == StepKind::signal) data.insert(data.end(), step.flags.begin(), step.flags.end());
    if (!data.empty()) {
      auto sig = std::next(reduce);
      if (sig == reducer.per_chunk.end() || sig->kind != StepKind::signal) {
        sig = reducer.per_chunk.insert(sig, signal_step({}, false, "chunk i is reduced"));
      }
      sig->flags.insert(sig->flags.end(), data.begin(), data.end());
      sig->note += "; chunk i is in my out-tree children's buffers";
    }
    reducer.prologue.insert(reducer.prologue.end(), copier.prologue.begin(), copier.prologue.end());
    reducer.epilogue.insert(reducer.epilogue.end(), copier.epilogue.begin(), copier.epilogue.end());
    removed[copier.id] = true;
  }
  // Renumber the lanes that remain (covered waits name lanes by id).
  std::vector<int> id_of(s.lanes.size(), -1);
  std::vector<Lane> kept;
  for (Lane& lane : s.lanes) {
    if (removed[lane.id]) continue;
    id_of[lane.id] = static_cast<int>(kept.size());
    kept.push_back(std::move(lane));
  }
  for (Lane& lane : kept) {
    lane.id = id_of[lane.id];
    for (std::vector<Step>* section : {&lane.prologue, &lane.per_chunk, &lane.epilogue})
      for (Step& step : *section)
        if (step.target == WaitTarget::covered && step.kind == StepKind::wait) {
          CANOPY_INTERNAL_ASSERT(id_of[step.dependency] >= 0, "a covered wait on a fused lane");
          step.dependency = id_of[step.dependency];
        }
  }
  s.lanes = std::move(kept);
}

// Schedules made so far (lowering_count).
std::atomic<std::uint64_t> lowerings{0};

}  // namespace

std::uint64_t lowering_count() { return lowerings.load(); }
void count_lowering() { lowerings.fetch_add(1); }

void check_relay_gpus(const Plan& plan, const Topology& topology, const std::vector<std::string>& allowed,
                      std::string_view fix) {
  const std::vector<std::string> relays = relay_gpus_of(plan, topology);
  for (std::size_t t = 0; t < plan.trees.size(); ++t)
    for (const TreeEdge& e : plan.trees[t].edges)
      for (const std::string& via : e.path)
        if (std::find(relays.begin(), relays.end(), via) != relays.end() &&
            std::find(allowed.begin(), allowed.end(), via) == allowed.end())
          throw Error(fmt::format("plan tree {} (root {}): edge {} -> {} is relayed by {}, a GPU outside the ranks{}: "
                                  "{}",
                                  t, plan.trees[t].root, e.from, e.to, via,
                                  allowed.empty() ? "" : fmt::format(" and not one of the relays ({})",
                                                                     fmt::join(allowed, ",")),
                                  fix));
}

void check_no_relay_gpus(const Plan& plan, const Topology& topology) {
  check_relay_gpus(plan, topology, {},
                   "this kernel is built without relay participants (canopy gen --relay and a communicator with "
                   "relays generate them): plan without --relay");
}

void place_lanes_on_devices(Schedule& s) {
  // Participants (ranks, then relays) grouped by device; lanes in (participant, lane id) order.
  int devices = 0;
  for (int r = 0; r < s.participants(); ++r) devices = std::max(devices, s.device_of(r) + 1);
  s.devices.assign(devices, {});
  for (int d = 0; d < devices; ++d) s.devices[d].device = d;
  for (int r = 0; r < s.participants(); ++r) s.devices[s.device_of(r)].ranks.push_back(r);
  for (const DeviceSchedule& d : s.devices)
    if (d.ranks.empty())
      throw Error(fmt::format("rank placement leaves device {} without ranks: number devices 0..{} without gaps",
                              d.device, devices - 1));
  for (DeviceSchedule& d : s.devices)
    for (int r : d.ranks)
      for (const Lane& lane : s.lanes)
        if (lane.rank == r) {
          d.lanes.push_back(lane.id);
          d.blocks += lane.blocks;
        }
}

Schedule lower(const Plan& plan, const CodegenOptions& options) {
  count_lowering();
  std::vector<TreeShape> shapes;
  Schedule s = lay_out_lanes(plan, options, &shapes);
  const int n = s.participants();

  // Counters and FIFOs, per tree and participant, in order; `blocks` of each.
  s.resources.assign(n, {});
  std::map<int, LaneResources> res;  // by tree
  for (const Lane& lane : s.lanes) {
    auto new_flag = [&](int r) {
      const int base = s.resources[r].flag_count;
      s.resources[r].flag_count += lane.blocks;
      return base;
    };
    LaneResources& lr = res[lane.tree];
    if (lr.data.empty()) {
      lr.data.assign(n, -1), lr.credit.assign(n, -1);
      lr.grant.assign(n, {}), lr.child_data.assign(n, {}), lr.fifo.assign(n, {});
    }
    const int r = lane.rank;
    const TreeShape& shape = shapes[lane.tree];
    auto pulled = [&](int parent, int child) { return is_pulled(s, shape, lane.tree, parent, child); };
    if (plan.trees[lane.tree].direction == TreeDirection::out) {
      if (lane.role != LaneRole::root) {
        if (pulled(lane.parent, r)) {
          lr.ready[{r, lane.parent}] = new_flag(r);
        } else {
          lr.data[r] = new_flag(r);
          // A relay receives into its FIFO (it has no buffer), and so does a rank whose parent is a relay (a relay
          // never writes a rank's buffer: it may be another tenant's process).
          if (s.options.own_buffers_only || s.is_relay(r) || s.is_relay(lane.parent)) {
            lr.fifo[r][lane.parent] = s.resources[r].scratch_bytes;
            s.resources[r].scratch_bytes += s.fifo_bytes() * lane.blocks;
          }
        }
      }
      for (int c : lane.children) {
        if (pulled(r, c)) lr.done[{c, r}] = new_flag(r);
        else lr.grant[r][c] = new_flag(r);
      }
    } else {
      for (int c : lane.children) {
        if (pulled(r, c)) {
          lr.ready[{r, c}] = new_flag(r);
          continue;
        }
        lr.child_data[r][c] = new_flag(r);
        lr.fifo[r][c] = s.resources[r].scratch_bytes;
        s.resources[r].scratch_bytes += s.fifo_bytes() * lane.blocks;
      }
      if (lane.role != LaneRole::root) {
        if (pulled(lane.parent, r)) lr.done[{lane.parent, r}] = new_flag(r);
        else lr.credit[r] = new_flag(r);
      }
      if (lane.role == LaneRole::root && plan.collective == Collective::allreduce) lr.progress = new_flag(r);
    }
  }

  // Which lanes reduce each allreduce root's part (the out-lanes at that root wait on them).
  std::map<int, std::vector<int>> reducing_lanes;  // root rank -> lane ids
  for (const Lane& lane : s.lanes)
    if (lane.role == LaneRole::root && plan.trees[lane.tree].direction == TreeDirection::in)
      reducing_lanes[lane.rank].push_back(lane.id);

  const bool per_root = cuts_per_root_block(plan.collective);
  for (Lane& lane : s.lanes) {
    const LaneResources& lr = res[lane.tree];
    const int r = lane.rank;
    const TreeShape& shape = shapes[lane.tree];
    auto pulled = [&](int parent, int child) { return is_pulled(s, shape, lane.tree, parent, child); };
    std::vector<int> pushed_children, pulled_children;
    for (int c : lane.children) (pulled(r, c) ? pulled_children : pushed_children).push_back(c);
    // Owner of pulled edges: say once that my send buffer holds this launch's data; at the end, wait until every
    // reader is done with it (the caller may overwrite it once this launch is over).
    auto announce = [&](const std::vector<int>& readers) {
      if (readers.empty()) return;
      std::vector<FlagRef> flags;
      for (int q : readers) flags.push_back({q, lr.ready.at({q, r})});
      lane.prologue.push_back(
          signal_step(flags, true, "my send buffer holds this launch's data: readers may pull from it"));
    };
    auto await_readers = [&](const std::vector<int>& readers) {
      for (int q : readers)
        lane.epilogue.push_back(wait_step({r, lr.done.at({q, r})}, WaitTarget::epoch,
                                          fmt::format("{} has finished reading my send buffer", rank_name(s, q))));
    };
    // Reader of pulled edges: wait until each owner has entered this launch; at the end, release their buffers.
    auto await_owners = [&](const std::vector<int>& owners) {
      for (int q : owners)
        lane.prologue.push_back(wait_step({r, lr.ready.at({r, q})}, WaitTarget::epoch,
                                          fmt::format("{}'s send buffer holds this launch's data", rank_name(s, q))));
    };
    auto release_owners = [&](const std::vector<int>& owners) {
      if (owners.empty()) return;
      std::vector<FlagRef> flags;
      for (int q : owners) flags.push_back({q, lr.done.at({r, q})});
      lane.epilogue.push_back(signal_step(flags, true, "I have finished reading the send buffers I pulled from"));
    };
    if (plan.trees[lane.tree].direction == TreeDirection::out) {
      if (lane.role != LaneRole::root && pulled(lane.parent, r)) {
        await_owners({lane.parent});
        lane.per_chunk.push_back(step_of(StepKind::sync));
        BufferRef source{BufferKind::send, lane.parent};
        source.block_local = per_root;
        Step copy = step_of(StepKind::reduce_copy);
        copy.sources = {source};
        copy.destinations = {BufferRef{BufferKind::recv, r}};
        copy.note = fmt::format("pull chunk i from {}'s send buffer", rank_name(s, lane.parent));
        lane.per_chunk.push_back(copy);
        release_owners({lane.parent});
        continue;
      }
      // With FIFOs (own_buffers_only) a child drains its parent's chunks from its FIFO into its receive buffer and
      // its children's FIFOs, and raises the parent's grant counter as each slot is free again (as in-tree credits).
      // Relays (Blink+) hold no buffer and never touch a rank's: every edge into or out of one is a FIFO edge.
      const bool fifos =
          s.options.own_buffers_only || s.is_relay(r) || (lane.parent >= 0 && s.is_relay(lane.parent));  // my FIFO
      auto fifo_child = [&](int c) { return s.options.own_buffers_only || s.is_relay(c) || s.is_relay(r); };
      if (lane.role != LaneRole::root) {
        lane.prologue.push_back(signal_step(
            {{lane.parent, lr.grant[lane.parent].at(r)}}, true,
            fifos ? fmt::format("my FIFO is free for this launch: {} may fill it", rank_name(s, lane.parent))
                  : fmt::format("my receive buffer is free for this launch: {} may write", rank_name(s, lane.parent))));
      }
      announce(pulled_children);
      for (int c : pushed_children)
        if (!fifo_child(c))
          lane.prologue.push_back(wait_step(FlagRef{r, lr.grant[r].at(c)}, WaitTarget::epoch,
                                            fmt::format("{} has entered this launch", rank_name(s, c))));
      if (lane.role == LaneRole::leaf && !fifos) {
        lane.epilogue.push_back(wait_step(FlagRef{r, lr.data[r]}, WaitTarget::all,
                                          fmt::format("every chunk from {} has arrived", rank_name(s, lane.parent))));
        continue;
      }
      if (lane.role != LaneRole::root) {
        lane.per_chunk.push_back(wait_step(FlagRef{r, lr.data[r]}, WaitTarget::chunk,
                                           fmt::format("chunk i from {} has arrived", rank_name(s, lane.parent))));
      }
      BufferRef source{BufferKind::recv, r};
      if (fifos && lane.role != LaneRole::root) {
        source = BufferRef{BufferKind::fifo, r};
        source.fifo_offset = lr.fifo[r].at(lane.parent);
      }
      if (lane.role == LaneRole::root && plan.collective == Collective::allreduce) {
        for (int dep : reducing_lanes[r]) {
          const LaneResources& dr = res[s.lanes[dep].tree];
          Step w = wait_step({r, dr.progress}, WaitTarget::covered,
                             fmt::format("tree {} has reduced chunk i's elements", s.lanes[dep].tree));
          w.dependency = dep;
          lane.per_chunk.push_back(w);
        }
      } else if (lane.role == LaneRole::root) {
        source = BufferRef{BufferKind::send, r};
        source.block_local = per_root;
      }
      for (int c : pushed_children)
        if (fifo_child(c))
          lane.per_chunk.push_back(wait_step(FlagRef{r, lr.grant[r].at(c)}, WaitTarget::slot_free,
                                             fmt::format("{} has a free FIFO slot for chunk i", rank_name(s, c))));
      lane.per_chunk.push_back(step_of(StepKind::sync));
      Step copy = step_of(StepKind::reduce_copy);
      copy.sources = {source};
      int fifo_children = 0;
      for (int c : pushed_children) {
        BufferRef to{BufferKind::recv, c};
        if (fifo_child(c)) {
          to = BufferRef{BufferKind::fifo, c};
          to.fifo_offset = lr.fifo[c].at(r);
          ++fifo_children;
        }
        copy.destinations.push_back(to);
      }
      if (lane.role != LaneRole::root) {
        if (fifos && !s.is_relay(r)) copy.destinations.push_back(BufferRef{BufferKind::recv, r});
      } else if (plan.collective != Collective::allreduce) {
        BufferRef own{BufferKind::recv, r};
        own.skip_if_source = true;
        copy.destinations.push_back(own);
      }
      if (s.is_relay(r))
        copy.note = "forward chunk i from my FIFO to every child's FIFO (a relay: no buffer of mine)";
      else if (fifos && lane.role != LaneRole::root && fifo_children < static_cast<int>(pushed_children.size()))
        copy.note = "chunk i from my FIFO into my receive buffer and every child's FIFO or buffer";
      else if (fifos && lane.role != LaneRole::root)
        copy.note = pushed_children.empty() ? "chunk i from my FIFO into my receive buffer"
                                            : "chunk i from my FIFO into my receive buffer and every child's FIFO";
      else
        copy.note = pushed_children.empty() ? "my own copy" : "forward chunk i to every child";
      if (!copy.destinations.empty()) lane.per_chunk.push_back(copy);
      std::vector<FlagRef> flags;
      for (int c : pushed_children) flags.push_back({c, lr.data[c]});
      if (fifos && lane.role != LaneRole::root) flags.push_back({lane.parent, lr.grant[lane.parent].at(r)});
      // Where a relay makes some edges FIFO edges (not own buffers only), children may hold FIFOs, buffers or both.
      const bool relay_fifos = !s.options.own_buffers_only && (fifos || fifo_children > 0);
      const std::string with = fifo_children == static_cast<int>(pushed_children.size()) ? "FIFOs"
                               : fifo_children == 0                                       ? "buffers"
                                                                                          : "FIFOs and buffers";
      const std::string note =
          pushed_children.empty() ? "my FIFO slot of chunk i is free again"
          : relay_fifos
              ? fmt::format("chunk i is in my children's {}{}", with,
                            fifos && lane.role != LaneRole::root ? "; my slot of it is free again" : "")
          : !fifos                     ? "chunk i is in my children's buffers"
          : lane.role == LaneRole::root ? "chunk i is in my children's FIFOs"
                                        : "chunk i is in my children's FIFOs; my slot of it is free again";
      if (!flags.empty()) lane.per_chunk.push_back(signal_step(flags, false, note));
      await_readers(pulled_children);
    } else {
      if (lane.role != LaneRole::root && pulled(lane.parent, r)) {  // a leaf whose parent reads its input
        announce({lane.parent});
        await_readers({lane.parent});
        continue;
      }
      if (!pushed_children.empty()) {
        std::vector<FlagRef> flags;
        for (int c : pushed_children) flags.push_back({c, lr.credit[c]});
        lane.prologue.push_back(signal_step(flags, true, "my FIFOs are free for this launch: children may fill them"));
      }
      await_owners(pulled_children);
      for (int c : pushed_children) {
        lane.per_chunk.push_back(
            wait_step(FlagRef{r, lr.child_data[r].at(c)}, WaitTarget::chunk,
                      fmt::format("{}'s partial result for chunk i is in my FIFO", rank_name(s, c))));
      }
      if (lane.role != LaneRole::root) {
        lane.per_chunk.push_back(
            wait_step(FlagRef{r, lr.credit[r]}, WaitTarget::slot_free,
                      fmt::format("{} has a free FIFO slot for chunk i", rank_name(s, lane.parent))));
      }
      lane.per_chunk.push_back(step_of(StepKind::sync));
      Step reduce = step_of(StepKind::reduce_copy);
      if (!s.is_relay(r)) reduce.sources = {BufferRef{BufferKind::send, r}};  // a relay adds nothing: it forwards
      for (int c : lane.children) {
        if (pulled(r, c)) {
          reduce.sources.push_back(BufferRef{BufferKind::send, c});
          continue;
        }
        BufferRef f{BufferKind::fifo, r};
        f.fifo_offset = lr.fifo[r].at(c);
        reduce.sources.push_back(f);
      }
      const std::string inputs = pulled_children.empty()    ? "my children's partials"
                                 : pushed_children.empty() ? "my children's inputs"
                                                           : "my children's partials and inputs";
      if (lane.role == LaneRole::root) {
        BufferRef out{BufferKind::recv, r};
        out.block_local = per_root;
        reduce.destinations = {out};
        reduce.note = fmt::format("reduce my input with {} into my output", inputs);
      } else {
        BufferRef f{BufferKind::fifo, lane.parent};
        f.fifo_offset = lr.fifo[lane.parent].at(r);
        reduce.destinations = {f};
        reduce.note = s.is_relay(r)
                          ? fmt::format("forward my child's partial to {}'s FIFO (a relay: no buffer of mine)",
                                        rank_name(s, lane.parent))
                      : lane.children.empty()
                          ? fmt::format("send my input to {}", rank_name(s, lane.parent))
                          : fmt::format("reduce my input with {} into {}'s FIFO", inputs, rank_name(s, lane.parent));
      }
      lane.per_chunk.push_back(reduce);
      Step sig = step_of(StepKind::signal);
      if (lane.role != LaneRole::root) sig.flags.push_back({lane.parent, lr.child_data[lane.parent].at(r)});
      for (int c : pushed_children) sig.flags.push_back({c, lr.credit[c]});
      if (lr.progress >= 0 && lane.role == LaneRole::root) sig.flags.push_back({r, lr.progress});
      sig.note = lane.role == LaneRole::root ? "chunk i is reduced"
                                             : fmt::format("chunk i is in {}'s FIFO", rank_name(s, lane.parent));
      if (!pushed_children.empty()) sig.note += "; my FIFO slots are free again";
      if (!sig.flags.empty()) lane.per_chunk.push_back(sig);
      release_owners(pulled_children);
    }
  }
  if (plan.collective == Collective::allreduce) fuse_allreduce_roots(s);
  place_lanes_on_devices(s);
  return s;
}

}  // namespace canopy
