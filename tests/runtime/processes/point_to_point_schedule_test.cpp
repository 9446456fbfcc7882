// PointToPointSchedule without a GPU: the side streams of several processes, each a queue of its groups' steps, run
// against shared `staged` and `read` words in random interleavings (from a printed seed). Whatever the order, every
// queue runs to its end (no deadlock), every copy out finds its sender's staging regions holding exactly the group it
// reads (neither an older one nor one staged later over it), and no word ever moves back.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "runtime/processes/point_to_point_exchange.hpp"
#include "runtime/processes/point_to_point_schedule.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

using Kind = PointToPointStep::Kind;

// A group of random transfers between `ranks` ranks (each pair with probability 2/5, now and then twice, counts 0 to
// 99 of f32): the same list for every process, as the agreement gives each.
std::vector<Transfer> random_group(std::mt19937_64& rng, int ranks) {
  std::vector<Transfer> out;
  std::uniform_int_distribution<int> percent(0, 99), count(0, 99);
  for (int s = 0; s < ranks; ++s)
    for (int r = 0; r < ranks; ++r) {
      if (percent(rng) >= 40) continue;
      const int times = percent(rng) < 20 ? 2 : 1;
      for (int k = 0; k < times; ++k) {
        Transfer t;
        t.sender = s;
        t.receiver = r;
        t.index = k;
        t.count = static_cast<std::uint64_t>(count(rng));
        out.push_back(t);
      }
    }
  return out;
}

// One queued step of a process's side stream, with the plan of its group.
struct Queued {
  PointToPointStep step;
  const PointToPointPlan* plan = nullptr;
};

// `groups` random groups between processes holding `per_process` ranks each, their side streams interleaved at
// random: the checks above.
void run_interleaved(int processes, int per_process, int groups, std::mt19937_64& rng) {
  std::vector<int> process_of_rank;
  for (int p = 0; p < processes; ++p)
    for (int i = 0; i < per_process; ++i) process_of_rank.push_back(p);
  // Every process's plans (kept alive for the queues) and side stream.
  std::vector<std::vector<PointToPointPlan>> plans(processes);
  for (auto& p : plans) p.reserve(groups);
  std::vector<std::vector<Queued>> queue(processes);
  std::deque<PointToPointSchedule> schedules;  // not movable (an atomic count)
  for (int p = 0; p < processes; ++p) schedules.emplace_back(processes);
  for (int g = 0; g < groups; ++g) {
    const std::vector<Transfer> transfers = random_group(rng, processes * per_process);
    for (int p = 0; p < processes; ++p) {
      plans[p].push_back(plan_point_to_point(transfers, process_of_rank, p));
      for (const PointToPointStep& s : schedules[p].next(plans[p].back(), p)) queue[p].push_back({s, &plans[p].back()});
    }
  }
  for (int p = 0; p < processes; ++p) EXPECT_EQ(schedules[p].groups(), static_cast<std::uint32_t>(groups));
  std::vector<std::uint32_t> staged(processes, 0), read(processes, 0);
  std::vector<std::uint32_t> region(processes, 0);  // the group whose sends lie in each process's staging regions
  std::vector<std::size_t> at(processes, 0);
  const auto ready = [&](int p) {
    const PointToPointStep& s = queue[p][at[p]].step;
    if (s.kind == Kind::wait_read) return read[s.process] >= s.value;
    if (s.kind == Kind::wait_staged) return staged[s.process] >= s.value;
    return true;
  };
  for (;;) {
    std::vector<int> runnable;
    bool done = true;
    for (int p = 0; p < processes; ++p) {
      if (at[p] == queue[p].size()) continue;
      done = false;
      if (ready(p)) runnable.push_back(p);
    }
    if (done) break;
    if (runnable.empty()) {
      for (int p = 0; p < processes; ++p)
        if (at[p] < queue[p].size())
          ADD_FAILURE() << "deadlock: process " << p << " waits at step " << at[p] << " (kind "
                        << static_cast<int>(queue[p][at[p]].step.kind) << ", process " << queue[p][at[p]].step.process
                        << ", value " << queue[p][at[p]].step.value << ")";
      return;
    }
    const int p = runnable[std::uniform_int_distribution<std::size_t>(0, runnable.size() - 1)(rng)];
    const Queued& q = queue[p][at[p]++];
    switch (q.step.kind) {
      case Kind::copy_in:
        region[p] = q.step.value;
        break;
      case Kind::copy_out:
        for (int from = 0; from < processes; ++from)
          if (q.plan->reads_from[from]) {
            ASSERT_EQ(region[from], q.step.value) << "process " << p << " copies group " << q.step.value
                                                  << " out of process " << from << "'s regions";
          }
        break;
      case Kind::write_staged:
        ASSERT_GE(q.step.value, staged[p]);
        staged[p] = q.step.value;
        break;
      case Kind::write_read:
        ASSERT_GE(q.step.value, read[p]);
        read[p] = q.step.value;
        break;
      default:
        break;
    }
  }
}

TEST(PointToPointSchedule, AnyInterleavingOfTheProcessesSideStreamsEndsAndReadsEachGroupWhole) {
  std::mt19937_64 rng = testing::seeded_rng("PointToPointSchedule");
  for (int round = 0; round < 200; ++round) {
    run_interleaved(2 + round % 3, 1 + round % 2, 30, rng);
    if (HasFailure()) return;
  }
}

// The steps of one process: waits for its earlier readers only before it stages again, once per value; a process
// that moves nothing across processes queues nothing, yet counts the group.
TEST(PointToPointSchedule, WaitsForEarlierReadersOnlyBeforeStagingAgainAndOncePerValue) {
  const std::vector<int> process_of_rank = {0, 1, 2};
  const auto group = [&](std::vector<std::pair<int, int>> pairs) {
    std::vector<Transfer> t;
    for (auto [s, r] : pairs) {
      Transfer x;
      x.sender = s;
      x.receiver = r;
      x.count = 4;
      t.push_back(x);
    }
    return plan_point_to_point(t, process_of_rank, 0);
  };
  PointToPointSchedule s(3);
  // Group 1: 0 -> 1 and 2 -> 0.
  std::vector<PointToPointStep> steps = s.next(group({{0, 1}, {2, 0}}), 0);
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].kind, Kind::copy_in);
  EXPECT_EQ(steps[1].kind, Kind::write_staged);
  EXPECT_EQ(steps[2].kind, Kind::wait_staged);
  EXPECT_EQ(steps[2].process, 2);
  EXPECT_EQ(steps[2].value, 1u);
  EXPECT_EQ(steps[3].kind, Kind::copy_out);
  EXPECT_EQ(steps[4].kind, Kind::write_read);
  // Group 2: nothing across processes for process 0 (1 -> 2 only).
  EXPECT_TRUE(s.next(group({{1, 2}}), 0).empty());
  // Group 3: 0 -> 2: first wait until process 1 has read group 1.
  steps = s.next(group({{0, 2}}), 0);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].kind, Kind::wait_read);
  EXPECT_EQ(steps[0].process, 1);
  EXPECT_EQ(steps[0].value, 1u);
  // Group 4: 0 -> 1: process 2 read group 3; process 1's group 1 was waited for already.
  steps = s.next(group({{0, 1}}), 0);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].kind, Kind::wait_read);
  EXPECT_EQ(steps[0].process, 2);
  EXPECT_EQ(steps[0].value, 3u);
  EXPECT_EQ(s.groups(), 4u);
}

}  // namespace
}  // namespace canopy
