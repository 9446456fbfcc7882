// lower(): the schedule's shape (roles, blocks, counters, FIFOs, weights) and the errors a bad plan gets.
#include "codegen/lower.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"
#include "planner/plan_eval.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

Plan dgx1(Collective c) { return plan(load_topology("dgx1-v100"), c); }

std::string lower_error(const Plan& p, const CodegenOptions& o = {}) {
  try {
    lower(p, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Lower, EveryRankRunsEveryTreeWithOneParent) {
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                       Collective::reducescatter}) {
    const Plan p = dgx1(c);
    const Schedule s = lower(p, {});
    // Allreduce: an out-tree's root lane fused into its rank's reducing lane (FusedAllreduceRoots) is gone.
    int fused = 0;
    for (const Lane& lane : s.lanes)
      for (const Step& step : lane.per_chunk)
        if (step.kind == StepKind::reduce_copy && step.note.find("fused with tree") != std::string::npos) ++fused;
    EXPECT_EQ(fused > 0, c == Collective::allreduce) << to_string(c);
    ASSERT_EQ(s.lanes.size() + fused, p.trees.size() * 8) << to_string(c);
    std::set<std::pair<int, int>> tree_rank;
    for (const Lane& lane : s.lanes) tree_rank.insert({lane.tree, lane.rank});
    EXPECT_EQ(tree_rank.size(), s.lanes.size()) << "one lane per tree and rank";
    for (const Lane& lane : s.lanes) {
      EXPECT_EQ(lane.role == LaneRole::root, lane.parent < 0);
      EXPECT_EQ(lane.role == LaneRole::leaf, lane.children.empty() && lane.parent >= 0);
      EXPECT_TRUE(std::is_sorted(lane.children.begin(), lane.children.end()));
    }
  }
}

TEST(Lower, WeightsOfEachGroupFillTheSplitScale) {
  const Plan p = dgx1(Collective::allgather);
  const Schedule s = lower(p, {});
  std::map<std::string, std::int64_t> per_root;
  for (std::size_t t = 0; t < p.trees.size(); ++t) per_root[p.trees[t].root] += s.tree_weights[t];
  for (const auto& [root, total] : per_root) EXPECT_EQ(total, kSplitScale) << root;
}

TEST(Lower, BlocksFollowFractionsAndEachTreeGetsOne) {
  CodegenOptions o;
  o.blocks_per_rank = 24;
  const Schedule s = lower(plan(load_topology("h200x2"), Collective::allreduce), o);
  // Four trees of 8 blocks; each rank's out-tree root lane is fused away, so each GPU still runs 24.
  EXPECT_EQ(std::accumulate(s.tree_blocks.begin(), s.tree_blocks.end(), 0), 32);
  for (const DeviceSchedule& d : s.devices) EXPECT_EQ(d.blocks, 24);
  const Schedule b = lower(plan(load_topology("h200x2"), Collective::broadcast), o);
  EXPECT_EQ(std::accumulate(b.tree_blocks.begin(), b.tree_blocks.end(), 0), 24);
  o.blocks_per_rank = 1;
  const Schedule one = lower(dgx1(Collective::allreduce), o);
  for (int b : one.tree_blocks) EXPECT_EQ(b, 1);
  for (const DeviceSchedule& d : one.devices) EXPECT_EQ(d.blocks, static_cast<int>(d.lanes.size()));
}

// Two H200s: each rank roots one in-tree and one out-tree over the same half of the buffer, so its reducing lane
// also sends the reduced chunk to the other rank (a fused reduce-and-forward) and no lane waits for another's
// progress.
TEST(Lower, FusedAllreduceRoots) {
  const Schedule s = lower(plan(load_topology("h200x2"), Collective::allreduce), {});
  ASSERT_EQ(s.lanes.size(), 6u);  // 4 trees x 2 ranks, less the two out-tree roots
  int fused = 0;
  for (const Lane& lane : s.lanes) {
    for (const Step& step : lane.per_chunk) {
      EXPECT_NE(step.target == WaitTarget::covered && step.kind == StepKind::wait, true) << "lane " << lane.id;
      if (step.kind != StepKind::reduce_copy || lane.role != LaneRole::root) continue;
      if (s.plan.trees[lane.tree].direction != TreeDirection::in) continue;
      ++fused;
      ASSERT_EQ(step.destinations.size(), 2u);
      EXPECT_EQ(step.destinations[0].rank, lane.rank);      // my output
      EXPECT_EQ(step.destinations[1].rank, 1 - lane.rank);  // the other rank's output
    }
  }
  EXPECT_EQ(fused, 2);
  // Without the shared range there is nothing to fuse: broadcast keeps its one lane per tree and rank.
  EXPECT_EQ(lower(plan(load_topology("h200x2"), Collective::broadcast), {}).lanes.size(), 2u);
}

TEST(Lower, CountersAndFifosAreDistinctPerRank) {
  const Schedule s = lower(dgx1(Collective::allreduce), {});
  // Every counter a signal raises is raised by exactly one lane (single writer keeps counters monotonic).
  std::map<std::pair<int, int>, std::set<int>> writers;  // counter -> lanes raising it
  for (const Lane& lane : s.lanes)
    for (const auto* steps : {&lane.prologue, &lane.per_chunk})
      for (const Step& step : *steps)
        if (step.kind == StepKind::signal)
          for (FlagRef f : step.flags) writers[{f.rank, f.index}].insert(lane.id);
  for (const auto& [flag, lanes] : writers) {
    EXPECT_EQ(lanes.size(), 1u) << "rank " << flag.first << " counter " << flag.second;
    EXPECT_LE(flag.second + s.lanes[*lanes.begin()].blocks, s.resources[flag.first].flag_count);
  }
  // FIFO regions of one rank do not overlap.
  std::map<int, std::set<std::int64_t>> fifo_starts;
  for (const Lane& lane : s.lanes)
    for (const Step& step : lane.per_chunk)
      for (const BufferRef& b : step.destinations) {
        if (b.kind == BufferKind::fifo) {
          EXPECT_TRUE(fifo_starts[b.rank].insert(b.fifo_offset).second);
        }
      }
  for (const auto& [rank, starts] : fifo_starts)
    EXPECT_LE(*starts.rbegin() + s.fifo_bytes(), s.resources[rank].scratch_bytes);
}

CodegenOptions pulling() {
  CodegenOptions o;
  o.pull = PullEdges::all;
  return o;
}

TEST(Lower, PulledReduceOnTwoGpusNeedsNoFifoAndNoPerChunkCounter) {
  const Schedule s = lower(plan(load_topology("h200x2"), Collective::reduce), pulling());
  for (const RankResources& r : s.resources) EXPECT_EQ(r.scratch_bytes, 0);
  for (const Lane& lane : s.lanes) {
    if (lane.role == LaneRole::leaf) {
      EXPECT_TRUE(lane.per_chunk.empty()) << "a pulled leaf moves no data itself";
      ASSERT_EQ(lane.prologue.size(), 1u);
      EXPECT_EQ(lane.prologue[0].kind, StepKind::signal);
      ASSERT_EQ(lane.epilogue.size(), 1u);
      EXPECT_EQ(lane.epilogue[0].kind, StepKind::wait);
      continue;
    }
    ASSERT_EQ(lane.per_chunk.size(), 2u);  // sync, reduce: nothing to wait for or raise per chunk
    const Step& reduce = lane.per_chunk[1];
    ASSERT_EQ(reduce.sources.size(), 2u);
    EXPECT_EQ(reduce.sources[1], (BufferRef{BufferKind::send, lane.children[0]}));
    EXPECT_EQ(reduce.destinations, (std::vector<BufferRef>{BufferRef{BufferKind::recv, lane.rank}}));
  }
}

TEST(Lower, OnlyEdgesWhoseSenderHoldsItsWholeInputArePulled) {
  // Allreduce: leaves of in-trees are read directly; out-trees' roots send what they are still reducing, so every
  // out-tree edge stays pushed, and relays keep their FIFOs.
  const Schedule s = lower(dgx1(Collective::allreduce), pulling());
  const Schedule pushed = lower(dgx1(Collective::allreduce), {});
  int pulled_reads = 0;
  for (const Lane& lane : s.lanes) {
    const Lane& before = pushed.lanes[lane.id];
    if (s.plan.trees[lane.tree].direction == TreeDirection::out) {
      EXPECT_EQ(lane.per_chunk.size(), before.per_chunk.size()) << "out-tree lane " << lane.id;
      continue;
    }
    for (const Step& step : lane.per_chunk)
      for (const BufferRef& b : step.sources)
        if (b.kind == BufferKind::send && b.rank != lane.rank) {
          ++pulled_reads;
          EXPECT_TRUE(s.lanes[lane.id].children.end() !=
                      std::find(lane.children.begin(), lane.children.end(), b.rank));
          EXPECT_TRUE(std::none_of(s.lanes.begin(), s.lanes.end(), [&](const Lane& l) {
            return l.tree == lane.tree && l.rank == b.rank && !l.children.empty();
          })) << "only leaves are read directly";
        }
    if (lane.role == LaneRole::relay) {
      EXPECT_FALSE(lane.per_chunk.empty());
    }
  }
  EXPECT_GT(pulled_reads, 0);
  // Broadcast: the root's children read its send buffer; deeper edges stay pushed.
  int pulling_leaves = 0;
  for (const char* topology : {"dgx1-v100", "h200x2", "dgx2"}) {
    const Schedule b = lower(plan(load_topology(topology), Collective::broadcast), pulling());
    const int root = 0;  // broadcast roots at the first rank
    for (const Lane& lane : b.lanes) {
      if (lane.role != LaneRole::leaf) continue;
      const std::vector<BufferRef> read =
          lane.per_chunk.empty() ? std::vector<BufferRef>{} : lane.per_chunk.back().sources;
      if (lane.parent == root) {
        ++pulling_leaves;
        EXPECT_EQ(read, (std::vector<BufferRef>{BufferRef{BufferKind::send, root}})) << topology << " lane " << lane.id;
      } else {
        EXPECT_TRUE(lane.per_chunk.empty()) << topology << ": a deeper leaf is written by its parent (lane " << lane.id << ")";
      }
    }
  }
  EXPECT_GT(pulling_leaves, 0);
}

TEST(Lower, PulledEdgesGetOneHandshakeCounterEachWay) {
  const Schedule s = lower(dgx1(Collective::reducescatter), pulling());
  std::map<std::pair<int, int>, std::set<int>> writers;  // counter -> lanes raising it
  for (const Lane& lane : s.lanes)
    for (const auto* steps : {&lane.prologue, &lane.per_chunk, &lane.epilogue})
      for (const Step& step : *steps)
        if (step.kind == StepKind::signal)
          for (FlagRef f : step.flags) writers[{f.rank, f.index}].insert(lane.id);
  for (const auto& [flag, lanes] : writers) EXPECT_EQ(lanes.size(), 1u) << "rank " << flag.first << " counter " << flag.second;
  for (const Lane& lane : s.lanes)
    for (const auto* steps : {&lane.prologue, &lane.per_chunk, &lane.epilogue})
      for (const Step& step : *steps)
        if (step.kind == StepKind::wait) {
          EXPECT_TRUE(writers.count({step.flag.rank, step.flag.index})) << step.note;
        }
}

TEST(Lower, AutomaticPullReadsLeavesOnlyInReduce) {
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                       Collective::reducescatter}) {
    const Schedule s = lower(plan(load_topology("h200x2"), c), {});
    EXPECT_EQ(s.options.pull, c == Collective::reduce ? PullEdges::in : PullEdges::none) << to_string(c);
  }
  CodegenOptions o;
  o.pull = PullEdges::out;
  EXPECT_EQ(lower(dgx1(Collective::reduce), o).options.pull, PullEdges::out) << "an explicit choice stays";
}

TEST(Lower, VirtualRanksGroupLanesByDevice) {
  CodegenOptions o;
  o.device_of_rank = block_placement(8, 2);
  const Schedule s = lower(dgx1(Collective::broadcast), o);
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.devices[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(s.devices[1].ranks, (std::vector<int>{4, 5, 6, 7}));
}

// Eight ranks on five devices: blocks of two rounded up left the fifth device without a rank or a launch.
TEST(Lower, VirtualRanksInUnevenBlocksLaunchOnEveryDevice) {
  CodegenOptions o;
  o.device_of_rank = block_placement(8, 5);
  const Schedule s = lower(dgx1(Collective::allreduce), o);
  ASSERT_EQ(s.devices.size(), 5u);
  EXPECT_EQ(s.devices[2].ranks, (std::vector<int>{4, 5}));
  EXPECT_EQ(s.devices[3].ranks, (std::vector<int>{6}));
  EXPECT_EQ(s.devices[4].ranks, (std::vector<int>{7}));
}

TEST(LowerErrors, RelayGpusAreNamed) {
  PlanOptions po;
  po.gpus = {"gpu0", "gpu5"};
  po.relay = true;
  const Topology t = load_topology("dgx1-v100");
  const Plan p = plan(t, Collective::allgather, po);
  try {
    check_no_relay_gpus(p, t);
    ADD_FAILURE() << "a plan relayed through gpu4 passed";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("a GPU outside the ranks"));
  }
  EXPECT_NO_THROW(check_no_relay_gpus(plan(t, Collective::allgather), t));
  Plan named = dgx1(Collective::broadcast);
  named.trees[1].edges[0].to = "gpu9";
  EXPECT_THAT(lower_error(named), HasSubstr("'gpu9' is not one of the plan's ranks"));
}

TEST(LowerErrors, TreesMustSpanAndMatchTheCollective) {
  Plan p = dgx1(Collective::broadcast);
  p.trees[0].edges.pop_back();
  EXPECT_THAT(lower_error(p), HasSubstr("does not reach rank"));
  p = dgx1(Collective::broadcast);
  p.trees[0].direction = TreeDirection::in;
  EXPECT_THAT(lower_error(p), HasSubstr("does not fit a broadcast plan"));
  p = dgx1(Collective::broadcast);
  p.trees[0].edges.push_back(p.trees[0].edges.front());
  EXPECT_THAT(lower_error(p), HasSubstr("receives from two parents"));
  p = dgx1(Collective::broadcast);
  p.trees[0].fraction = 1e300;
  EXPECT_THAT(lower_error(p), HasSubstr("at most 1"));
  p = dgx1(Collective::allreduce);
  std::erase_if(p.trees, [](const Tree& t) { return t.direction == TreeDirection::out && t.root == "gpu3"; });
  EXPECT_THAT(lower_error(p), HasSubstr("no out-tree rooted there broadcasts it"));
}

TEST(LowerErrors, OptionsOutOfRangeNameTheFix) {
  const Plan p = dgx1(Collective::broadcast);
  CodegenOptions o;
  o.chunk_bytes = 1000;
  EXPECT_THAT(lower_error(p, o), HasSubstr("multiple of 16 bytes"));
  o = {};
  o.threads_per_block = 100;
  EXPECT_THAT(lower_error(p, o), HasSubstr("multiple of 32"));
  o = {};
  o.device_of_rank = {0, 0, 2, 2, 2, 2, 2, 2};
  EXPECT_THAT(lower_error(p, o), HasSubstr("leaves device 1 without ranks"));
  o.device_of_rank = {0, 1};
  EXPECT_THAT(lower_error(p, o), HasSubstr("2 devices for 8 ranks"));
  EXPECT_THAT([] {
    try {
      CodegenOptions q;
      set_pull(q, "leaves", "--pull");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  }(), HasSubstr("--pull 'leaves': expected auto (the default), none, in"));
}

}  // namespace
}  // namespace canopy

namespace canopy {
namespace {

// Relays (CodegenOptions::relay_gpus): participants after the ranks, one per crossing of a relay GPU by a tree's
// edge ("gpu3", then "gpu3#2" where one tree crosses it twice), each on its GPU's device; bad relay options named.
TEST(LowerRelays, ParticipantsFollowTheRanksOnTheirGpusDevices) {
  const Topology t = load_topology("dgx1-v100");
  PlanOptions po;
  po.gpus = {"gpu0", "gpu1"};
  po.relay = true;
  const Plan p = plan(t, Collective::allreduce, po);
  CodegenOptions o;
  o.relay_gpus = relay_gpus_of(p, t);
  EXPECT_EQ(o.relay_gpus, (std::vector<std::string>{"gpu2", "gpu3", "gpu4", "gpu5", "gpu6", "gpu7"}));
  const Schedule s = lower(p, o);
  EXPECT_EQ(s.ranks, 2);
  ASSERT_GE(s.participants(), 2 + 6);
  EXPECT_EQ(s.name_of(2), "gpu2");
  std::set<std::string> names;
  for (int r = 2; r < s.participants(); ++r) {
    EXPECT_TRUE(s.is_relay(r));
    names.insert(s.name_of(r));
    // relay GPU k (in topology order) on device 2 + k: after the ranks' devices 0 and 1
    const auto at = std::find(o.relay_gpus.begin(), o.relay_gpus.end(), s.relays[r - 2].gpu) - o.relay_gpus.begin();
    EXPECT_EQ(s.device_of(r), 2 + at) << s.name_of(r);
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(s.participants() - 2));  // every participant named once
  EXPECT_EQ(s.devices.size(), 8u);
  // Placed by the caller: every relay on device 0 beside the ranks (virtual GPUs).
  o.device_of_rank = {0, 0};
  o.device_of_relay.assign(6, 0);
  EXPECT_EQ(lower(p, o).devices.size(), 1u);
  // Errors name the fault.
  CodegenOptions bad = o;
  bad.device_of_relay = {0};
  EXPECT_THAT(lower_error(p, bad), HasSubstr("relay placement lists 1 devices for 6 relay GPUs"));
  bad = o;
  bad.relay_gpus[0] = "gpu1";
  bad.device_of_relay.clear();
  EXPECT_THAT(lower_error(p, bad), HasSubstr("relay GPU 'gpu1' is also a rank of the plan"));
}

}  // namespace
}  // namespace canopy
