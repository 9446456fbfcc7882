// Lowering is checked by running schedules on the host model of the GPU protocol (schedule_simulator.hpp): every
// shipped topology x collective delivers the right result for counts with tails, in place and out of place,
// across launches that reuse buffers and counters, with virtual ranks, under random interleavings.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "codegen/lower.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"
#include "tests/codegen/schedule_simulator.hpp"
#include "tests/test_util.hpp"
#include "planner/plan_eval.hpp"

namespace canopy::testing {
namespace {

constexpr Collective kCollectives[] = {Collective::broadcast, Collective::reduce, Collective::allreduce,
                                       Collective::allgather, Collective::reducescatter};

// Small chunks and few blocks so that short buffers still make many chunks, FIFO wrap-arounds and tails.
CodegenOptions simulated_options(DataType dtype = DataType::f32) {
  CodegenOptions o;
  o.dtype = dtype;
  o.chunk_bytes = 1024;
  o.fifo_depth = 2;
  o.blocks_per_rank = 3;
  o.pull = PullEdges::none;  // the pushed protocol; pulled edges have their own tests below
  return o;
}

double input_value(int launch, int rank, std::uint64_t j, ReduceOp op) {
  if (op == ReduceOp::prod) return 1 + (rank + j + launch) % 2;  // products of 1s and 2s stay exact
  return static_cast<double>((rank * 7 + j * 13 + launch * 3) % 11) - 3;
}

double combine(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return a + b;  // an average combines as a sum, divided once at the end
    case ReduceOp::prod: return a * b;
    case ReduceOp::min: return std::min(a, b);
    case ReduceOp::max: return std::max(a, b);
  }
  return 0;
}

// Sizes of the send and receive buffers per rank (elements), NCCL's convention.
std::pair<std::uint64_t, std::uint64_t> buffer_sizes(Collective c, std::uint64_t count, int n) {
  if (c == Collective::allgather) return {count, count * n};
  if (c == Collective::reducescatter) return {count * n, count};
  return {count, count};
}

struct Case {
  const Schedule* schedule;
  std::uint64_t count;
  bool in_place;
};

// Runs `cases` as consecutive launches on one simulator (shared counters and scratch) and checks every output.
void run_and_check(const std::vector<Case>& cases, std::vector<int> device_of_rank, std::mt19937_64& rng,
                   const std::string& what) {
  const int n = cases[0].schedule->ranks;
  std::int64_t scratch = 0;
  for (const Case& c : cases)
    for (const RankResources& r : c.schedule->resources) scratch = std::max(scratch, r.scratch_bytes);
  // Relay participants (after the ranks) run on their own devices and hold no buffer.
  for (int r = n; r < cases[0].schedule->participants(); ++r) device_of_rank.push_back(cases[0].schedule->device_of(r));
  ScheduleSimulator sim(static_cast<int>(device_of_rank.size()), device_of_rank, scratch);
  std::vector<SimLaunch> launches;
  std::vector<std::vector<std::vector<double>>> inputs;  // [launch][rank]
  // One receive buffer per rank, reused by every launch (the next launch may overwrite it).
  std::uint64_t largest = 0;
  for (const Case& c : cases) {
    const auto [send_size, recv_size] = buffer_sizes(c.schedule->plan.collective, c.count, n);
    largest = std::max({largest, recv_size, c.in_place ? send_size : 0});
  }
  std::vector<int> recv_storage;
  for (int r = 0; r < n; ++r) recv_storage.push_back(sim.add_storage(std::vector<double>(largest + 64, -1e9)));
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const Collective coll = c.schedule->plan.collective;
    const auto [send_size, recv_size] = buffer_sizes(coll, c.count, n);
    SimLaunch L;
    L.schedule = c.schedule;
    L.count = c.count;
    inputs.emplace_back();
    for (int r = 0; r < n; ++r) {
      std::vector<double> in(send_size);
      for (std::uint64_t j = 0; j < send_size; ++j) in[j] = input_value(static_cast<int>(k), r, j, c.schedule->options.op);
      inputs.back().push_back(in);
      L.recv.push_back({recv_storage[r], 0});
      if (!c.in_place) {
        L.send.push_back({sim.add_storage(in), 0});
      } else {
        // NCCL's in-place layouts: allgather sends from its block of recv; reduce-scatter receives into its block
        // of send. The input is written into the shared storage when the rank's previous launch is done.
        L.send.push_back({recv_storage[r], coll == Collective::allgather ? r * c.count : 0});
        if (coll == Collective::reducescatter) L.recv.back() = {recv_storage[r], r * c.count};
      }
    }
    launches.push_back(L);
  }
  int failures = 0;
  auto write_in_place_input = [&](int k, int r) {
    const Case& c = cases[k];
    if (!c.in_place) return;
    const SimBuffer& s = launches[k].send[r];
    std::copy(inputs[k][r].begin(), inputs[k][r].end(), sim.storage(s.storage).begin() + s.offset);
  };
  for (int r = 0; r < n; ++r) write_in_place_input(0, r);
  const std::string error = sim.run(launches, rng, [&](int k, int r) {
    const Case& c = cases[k];
    const Schedule& s = *c.schedule;
    const Collective coll = s.plan.collective;
    const ReduceOp op = s.options.op;
    const int root = s.plan.root ? static_cast<int>(std::find(s.plan.ranks.begin(), s.plan.ranks.end(), *s.plan.root) - s.plan.ranks.begin()) : -1;
    const auto& in = inputs[k];
    const std::vector<double>& out = sim.storage(launches[k].recv[r].storage);
    const std::uint64_t base = launches[k].recv[r].offset;
    auto expect = [&](std::uint64_t at, double want) {
      if (out[base + at] != want && failures++ < 5)
        ADD_FAILURE() << what << ": launch " << k << " (" << to_string(coll) << ", count " << c.count
                      << (c.in_place ? ", in place" : "") << ") rank " << r << " element " << at << ": " << out[base + at]
                      << ", expected " << want;
    };
    auto reduced = [&](std::uint64_t j) {
      double v = in[0][j];
      for (int q = 1; q < n; ++q) v = combine(op, v, in[q][j]);
      return v;
    };
    for (std::uint64_t j = 0; j < c.count; ++j) {
      if (coll == Collective::broadcast) expect(j, in[root][j]);
      if (coll == Collective::reduce && r == root) expect(j, reduced(j));
      if (coll == Collective::allreduce) expect(j, reduced(j));
      if (coll == Collective::allgather)
        for (int q = 0; q < n; ++q) expect(q * c.count + j, in[q][j]);
      if (coll == Collective::reducescatter) expect(j, reduced(r * c.count + j));
    }
    if (k + 1 < static_cast<int>(cases.size())) write_in_place_input(k + 1, r);
  });
  EXPECT_EQ(error, "") << what;
}

Plan plan_for(const std::string& topology, Collective c) { return plan(load_topology(topology), c); }

TEST(ScheduleSimulation, EveryShippedTopologyAndCollectiveDeliversTheResult) {
  auto rng = seeded_rng("ScheduleSimulation");
  for (const ShippedTopology& t : shipped_topologies()) {
    for (Collective c : kCollectives) {
      const Plan p = plan_for(std::string(t.name), c);
      const Schedule s = lower(p, simulated_options());
      const int n = s.ranks;
      // Counts: one element, a tail, several chunks per block, and tails that do not fill a vector.
      std::vector<Case> cases;
      for (std::uint64_t count : {1ull, 7ull, 1000ull, 4099ull}) cases.push_back({&s, count, false});
      cases.push_back({&s, 515, true});
      run_and_check(cases, block_placement(n, n), rng, fmt::format("{} {}", t.name, to_string(c)));
    }
  }
}

TEST(ScheduleSimulation, LaunchesOfDifferentPlansShareScratchAndBuffers) {
  auto rng = seeded_rng("ScheduleSimulation mixed");
  std::vector<Schedule> schedules;
  for (Collective c : kCollectives) schedules.push_back(lower(plan_for("dgx1-v100", c), simulated_options()));
  std::vector<Case> cases;
  for (int round = 0; round < 2; ++round)
    for (const Schedule& s : schedules) cases.push_back({&s, 777 + 10ull * round, round == 1});
  run_and_check(cases, block_placement(8, 8), rng, "dgx1-v100 mixed");
}

TEST(ScheduleSimulation, VirtualRanksShareDevices) {
  auto rng = seeded_rng("ScheduleSimulation virtual");
  for (int devices : {1, 2, 3}) {
    CodegenOptions o = simulated_options();
    o.device_of_rank = block_placement(8, devices);
    for (Collective c : {Collective::allreduce, Collective::allgather}) {
      const Schedule s = lower(plan_for("dgx1-v100", c), o);
      EXPECT_EQ(static_cast<int>(s.devices.size()), devices);
      run_and_check({{&s, 1001, false}, {&s, 64, true}}, o.device_of_rank, rng,
                    fmt::format("dgx1-v100 {} on {} devices", to_string(c), devices));
    }
  }
}

TEST(ScheduleSimulation, EveryOpAndElementSize) {
  auto rng = seeded_rng("ScheduleSimulation ops");
  for (DataType dtype : {DataType::f64, DataType::f16, DataType::u8})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
      CodegenOptions o = simulated_options(dtype);
      o.op = op;
      const Schedule s = lower(plan_for("hgx-h200", Collective::allreduce), o);
      run_and_check({{&s, 3001, false}}, block_placement(8, 8), rng,
                    fmt::format("hgx-h200 allreduce {} {}", to_string(dtype), to_string(op)));
    }
}

// The largest kernels: 128 blocks per rank (the Communicator's default from 128 MiB), so lanes of 32 blocks on
// h200x2 and ranges cut 128 ways, with chunks small enough that every block still moves several.
TEST(ScheduleSimulation, ManyBlocksPerLane) {
  auto rng = seeded_rng("ScheduleSimulation many blocks");
  for (Collective c : kCollectives) {
    CodegenOptions o = simulated_options();
    o.blocks_per_rank = 128;
    const Schedule s = lower(plan_for("h200x2", c), o);
    run_and_check({{&s, 300007, false}, {&s, 1, false}, {&s, 70001, true}}, block_placement(2, 2), rng,
                  fmt::format("h200x2 {} with 128 blocks per rank", to_string(c)));
  }
}

// Pulled edges (CodegenOptions::pull): receivers read leaves' and roots' send buffers directly.
CodegenOptions pulling_options(DataType dtype = DataType::f32) {
  CodegenOptions o = simulated_options(dtype);
  o.pull = PullEdges::all;
  return o;
}

TEST(ScheduleSimulation, PulledEdgesDeliverTheResultOnEveryShippedTopology) {
  auto rng = seeded_rng("ScheduleSimulation pulled");
  for (const ShippedTopology& t : shipped_topologies()) {
    for (Collective c : kCollectives) {
      const Schedule s = lower(plan_for(std::string(t.name), c), pulling_options());
      std::vector<Case> cases;
      for (std::uint64_t count : {1ull, 7ull, 1000ull, 4099ull}) cases.push_back({&s, count, false});
      cases.push_back({&s, 515, true});
      cases.push_back({&s, 2051, true});
      run_and_check(cases, block_placement(s.ranks, s.ranks), rng, fmt::format("{} {} pulled", t.name, to_string(c)));
    }
  }
}

TEST(ScheduleSimulation, PulledAndPushedSchedulesShareBuffersAndVirtualRanks) {
  auto rng = seeded_rng("ScheduleSimulation pulled mixed");
  for (int devices : {1, 3, 8}) {
    std::vector<Schedule> schedules;
    for (Collective c : kCollectives)
      for (bool pull : {true, false}) {
        CodegenOptions o = simulated_options();
        o.pull = pull ? PullEdges::all : PullEdges::none;
        o.device_of_rank = block_placement(8, devices);
        schedules.push_back(lower(plan_for("dgx1-v100", c), o));
      }
    std::vector<Case> cases;
    for (int round = 0; round < 2; ++round)
      for (const Schedule& s : schedules) cases.push_back({&s, 901 + 16ull * round, round == 1});
    run_and_check(cases, block_placement(8, devices), rng, fmt::format("dgx1-v100 mixed on {} devices", devices));
  }
}

// 128 blocks per rank on h200x2 for every collective, then f16 with prod and min on hgx-h200 (`collective`), each
// with the options `make` gives and the name `label`.
void check_many_blocks_and_ops(CodegenOptions (*make)(DataType), Collective collective, const char* label,
                               std::mt19937_64& rng) {
  for (Collective c : kCollectives) {
    CodegenOptions o = make(DataType::f32);
    o.blocks_per_rank = 128;
    const Schedule s = lower(plan_for("h200x2", c), o);
    run_and_check({{&s, 300007, false}, {&s, 1, false}, {&s, 70001, true}, {&s, 70001, true}}, block_placement(2, 2),
                  rng, fmt::format("h200x2 {} {} with 128 blocks per rank", to_string(c), label));
  }
  for (ReduceOp op : {ReduceOp::prod, ReduceOp::min}) {
    CodegenOptions o = make(DataType::f16);
    o.op = op;
    const Schedule s = lower(plan_for("hgx-h200", collective), o);
    run_and_check({{&s, 3001, false}, {&s, 999, true}}, block_placement(8, 8), rng,
                  fmt::format("hgx-h200 {} {} f16 {}", to_string(collective), label, to_string(op)));
  }
}

TEST(ScheduleSimulation, PulledEdgesWithManyBlocksAndEveryOp) {
  auto rng = seeded_rng("ScheduleSimulation pulled many");
  check_many_blocks_and_ops(pulling_options, Collective::reducescatter, "pulled", rng);
}

// How many failures run_and_check reports for `cases` (one rank per device, `ranks` of them), caught rather than
// failing the test: for schedules broken on purpose, which the host model must catch.
std::size_t failures_of(const std::vector<Case>& cases, int ranks, const char* seed, const std::string& what) {
  using Reporter = ::testing::ScopedFakeTestPartResultReporter;
  ::testing::TestPartResultArray failures;
  Reporter reporter(Reporter::INTERCEPT_ALL_THREADS, &failures);
  auto rng = seeded_rng(seed);
  run_and_check(cases, block_placement(ranks, ranks), rng, what);
  return static_cast<std::size_t>(failures.size());
}

// The handshake is what makes pulling safe: without the owner's final wait, a leaf's launch ends while its parent
// still reads its input, and the next in-place launch overwrites it. The host model must see that.
TEST(ScheduleSimulation, PulledEdgeWithoutTheOwnersFinalWaitIsCaught) {
  Schedule s = lower(plan_for("h200x2", Collective::reduce), pulling_options());
  int removed = 0;
  for (Lane& lane : s.lanes)
    if (lane.role == LaneRole::leaf) removed += static_cast<int>(std::erase_if(lane.epilogue, [](const Step& st) {
                                                   return st.kind == StepKind::wait;
                                                 }));
  ASSERT_GT(removed, 0) << "the leaf of a pulled reduce should wait for its reader";
  std::vector<Case> cases;
  for (int k = 0; k < 40; ++k) cases.push_back({&s, 4099, true});
  EXPECT_GT(failures_of(cases, 2, "ScheduleSimulation pulled unsafe", "h200x2 reduce pulled without the final wait"), 0)
      << "reading an input its owner already overwrote went unnoticed";
}

// Own buffers only (CodegenOptions::own_buffers_only, for ranks in different processes): every operand of a
// rank's steps that is a send or receive buffer is that rank's own, everything between ranks goes through FIFOs,
// and the result is right on every shipped topology, alongside the zero-copy schedules and with virtual ranks.
CodegenOptions own_buffers_options(DataType dtype = DataType::f32) {
  CodegenOptions o = simulated_options(dtype);
  o.pull = PullEdges::all;  // asked for, and refused: a pulled edge reads the owner's send buffer
  o.own_buffers_only = true;
  return o;
}

std::string foreign_buffer(const Schedule& s) {
  for (const Lane& lane : s.lanes)
    for (const std::vector<Step>* section : {&lane.prologue, &lane.per_chunk, &lane.epilogue})
      for (const Step& step : *section)
        for (const std::vector<BufferRef>* side : {&step.sources, &step.destinations})
          for (const BufferRef& b : *side)
            if (b.kind != BufferKind::fifo && b.rank != lane.rank)
              return fmt::format("lane {} (rank {}, tree {}): \"{}\" names rank {}'s {} buffer", lane.id, lane.rank,
                                 lane.tree, step.note, b.rank, b.kind == BufferKind::send ? "send" : "receive");
  return "";
}

TEST(ScheduleSimulation, OwnBuffersOnlyTouchNoOtherRanksBuffersAndDeliverTheResult) {
  auto rng = seeded_rng("ScheduleSimulation own buffers");
  for (const ShippedTopology& t : shipped_topologies()) {
    for (Collective c : kCollectives) {
      const Schedule s = lower(plan_for(std::string(t.name), c), own_buffers_options());
      EXPECT_EQ(s.options.pull, PullEdges::none) << t.name;
      EXPECT_EQ(foreign_buffer(s), "") << t.name << " " << to_string(c);
      std::vector<Case> cases;
      for (std::uint64_t count : {1ull, 7ull, 1000ull, 4099ull}) cases.push_back({&s, count, false});
      cases.push_back({&s, 515, true});
      cases.push_back({&s, 2051, true});
      run_and_check(cases, block_placement(s.ranks, s.ranks), rng,
                    fmt::format("{} {} own buffers only", t.name, to_string(c)));
    }
  }
}

TEST(ScheduleSimulation, OwnBuffersOnlyBesideZeroCopySchedulesAndVirtualRanks) {
  auto rng = seeded_rng("ScheduleSimulation own buffers mixed");
  for (int devices : {1, 3, 8}) {
    std::vector<Schedule> schedules;
    for (Collective c : kCollectives)
      for (bool own : {true, false}) {
        CodegenOptions o = simulated_options();
        o.own_buffers_only = own;
        o.device_of_rank = block_placement(8, devices);
        schedules.push_back(lower(plan_for("dgx1-v100", c), o));
      }
    std::vector<Case> cases;
    for (int round = 0; round < 2; ++round)
      for (const Schedule& s : schedules) cases.push_back({&s, 901 + 16ull * round, round == 1});
    run_and_check(cases, block_placement(8, devices), rng,
                  fmt::format("dgx1-v100 own buffers mixed on {} devices", devices));
  }
}

TEST(ScheduleSimulation, OwnBuffersOnlyWithManyBlocksAndEveryOp) {
  auto rng = seeded_rng("ScheduleSimulation own buffers many");
  check_many_blocks_and_ops(own_buffers_options, Collective::allreduce, "own buffers only", rng);
}

// The broadcast FIFOs' credits are what keep a parent from overwriting a slot its child has not drained: without the
// parent's per-chunk wait for a free slot, the host model must see wrong results.
TEST(ScheduleSimulation, OwnBuffersOnlyWithoutTheSlotWaitIsCaught) {
  Schedule s = lower(plan_for("dgx1-v100", Collective::broadcast), own_buffers_options());
  int removed = 0;
  for (Lane& lane : s.lanes)
    removed += static_cast<int>(std::erase_if(lane.per_chunk, [](const Step& st) {
      return st.kind == StepKind::wait && st.target == WaitTarget::slot_free;
    }));
  ASSERT_GT(removed, 0) << "a broadcast through FIFOs should wait for free slots";
  std::vector<Case> cases;
  for (int k = 0; k < 6; ++k) cases.push_back({&s, 20011, false});
  EXPECT_GT(failures_of(cases, 8, "ScheduleSimulation own buffers unsafe",
                        "dgx1-v100 broadcast through FIFOs without the slot wait"),
            0)
      << "a FIFO slot overwritten before it was drained went unnoticed";
}

// The zero-copy schedules do write other ranks' receive buffers: the check above would see it.
TEST(ScheduleSimulation, ZeroCopySchedulesDoNameOtherRanksBuffers) {
  const Schedule s = lower(plan_for("dgx1-v100", Collective::broadcast), simulated_options());
  EXPECT_NE(foreign_buffer(s), "");
}

}  // namespace
}  // namespace canopy::testing

namespace canopy::testing {
namespace {

// Blink+: the tenant's GPUs (ranks) with the other GPUs of the machine forwarding (canopy plan --relay).
Schedule relay_schedule(const std::string& topology, const std::vector<std::string>& gpus, Collective c,
                        CodegenOptions o) {
  const Topology t = load_topology(topology);
  PlanOptions po;
  po.gpus = gpus;
  po.relay = true;
  const Plan p = plan(t, c, po);
  o.relay_gpus = relay_gpus_of(p, t);
  return lower(p, o);
}

// "" when every relay lane only forwards, FIFO to FIFO: one source a step, its own FIFO, into its children's FIFOs;
// never a send or receive buffer of anyone (a relay may be another tenant's process: it maps no user buffer).
std::string relay_touches_more_than_fifos(const Schedule& s) {
  for (const Lane& lane : s.lanes) {
    if (!s.is_relay(lane.rank)) continue;
    for (const std::vector<Step>* section : {&lane.prologue, &lane.per_chunk, &lane.epilogue})
      for (const Step& step : *section) {
        if (step.kind != StepKind::reduce_copy) continue;
        if (step.sources.size() != 1)
          return fmt::format("relay lane {} ({}) combines {} sources", lane.id, s.name_of(lane.rank),
                             step.sources.size());
        if (step.sources[0].kind != BufferKind::fifo || step.sources[0].rank != lane.rank)
          return fmt::format("relay lane {} ({}) reads other than its FIFO: \"{}\"", lane.id, s.name_of(lane.rank),
                             step.note);
        for (const BufferRef& b : step.destinations)
          if (b.kind != BufferKind::fifo || b.rank == lane.rank)
            return fmt::format("relay lane {} ({}) writes other than its children: \"{}\"", lane.id,
                               s.name_of(lane.rank), step.note);
      }
  }
  return "";
}

const std::vector<std::vector<std::string>> kTenants = {
    {"gpu0", "gpu1"}, {"gpu0", "gpu3"}, {"gpu0", "gpu1", "gpu2"}, {"gpu0", "gpu1", "gpu4", "gpu5"},
    {"gpu0", "gpu1", "gpu2", "gpu3", "gpu5"}};

TEST(ScheduleSimulation, RelaysForwardEveryCollectiveForDgx1Tenants) {
  auto rng = seeded_rng("ScheduleSimulation relays");
  int with_relays = 0;
  for (const char* topology : {"dgx1-v100", "dgx1-p100"})
    for (const std::vector<std::string>& gpus : kTenants)
      for (Collective c : kCollectives) {
        const std::string what = fmt::format("{} {{{}}} {} with relays", topology, fmt::join(gpus, ","), to_string(c));
        const Schedule s = relay_schedule(topology, gpus, c, simulated_options());
        with_relays += s.relays.empty() ? 0 : 1;
        EXPECT_EQ(relay_touches_more_than_fifos(s), "") << what;
        std::vector<Case> cases;
        for (std::uint64_t count : {1ull, 7ull, 1000ull, 4099ull}) cases.push_back({&s, count, false});
        cases.push_back({&s, 515, true});
        run_and_check(cases, block_placement(s.ranks, s.ranks), rng, what);
      }
  // Most of these tenants' plans do route through other GPUs (otherwise this test checks nothing new).
  EXPECT_GE(with_relays, 40);
}

TEST(ScheduleSimulation, RelaysWithEveryOpManyBlocksOwnBuffersAndPulledEdges) {
  auto rng = seeded_rng("ScheduleSimulation relays options");
  for (ReduceOp op : {ReduceOp::prod, ReduceOp::min, ReduceOp::max})
    for (Collective c : {Collective::reduce, Collective::allreduce, Collective::reducescatter}) {
      CodegenOptions o = simulated_options();
      o.op = op;
      const Schedule s = relay_schedule("dgx1-v100", {"gpu0", "gpu1", "gpu4", "gpu5"}, c, o);
      run_and_check({{&s, 1000, false}, {&s, 333, true}}, block_placement(s.ranks, s.ranks), rng,
                    fmt::format("relays {} {}", to_string(c), to_string(op)));
    }
  for (Collective c : kCollectives) {
    CodegenOptions many = simulated_options();
    many.blocks_per_rank = 9;
    CodegenOptions own = simulated_options();
    own.own_buffers_only = true;
    CodegenOptions pulled = simulated_options();
    pulled.pull = PullEdges::all;
    for (const CodegenOptions& o : {many, own, pulled}) {
      const Schedule s = relay_schedule("dgx1-p100", {"gpu0", "gpu1"}, c, o);
      ASSERT_FALSE(s.relays.empty()) << to_string(c);
      EXPECT_EQ(relay_touches_more_than_fifos(s), "") << to_string(c);
      if (o.own_buffers_only) EXPECT_EQ(foreign_buffer(s), "") << to_string(c);
      run_and_check({{&s, 4099, false}, {&s, 2051, true}}, block_placement(s.ranks, s.ranks), rng,
                    fmt::format("relays {} {}", to_string(c), to_string(o)));
    }
  }
}

TEST(ScheduleSimulation, RelaysSharingTheirDevicesWithRanksAndOtherSchedules) {
  // Every participant on one device (the GPU machine runs virtual GPUs so), beside a schedule without relays.
  auto rng = seeded_rng("ScheduleSimulation relays one device");
  for (Collective c : kCollectives) {
    CodegenOptions o = simulated_options();
    o.device_of_rank = {0, 0};
    const Schedule plain = lower(plan(load_topology("dgx1-p100"), c, [] {
                                   PlanOptions po;
                                   po.gpus = {"gpu0", "gpu1"};
                                   return po;
                                 }()),
                                 o);
    const Topology t = load_topology("dgx1-p100");
    PlanOptions po;
    po.gpus = {"gpu0", "gpu1"};
    po.relay = true;
    const Plan p = plan(t, c, po);
    o.relay_gpus = relay_gpus_of(p, t);
    o.device_of_relay.assign(o.relay_gpus.size(), 0);
    const Schedule relayed = lower(p, o);
    ASSERT_EQ(relayed.devices.size(), 1u) << to_string(c);
    run_and_check({{&relayed, 1000, false}, {&plain, 777, false}, {&relayed, 4099, true}}, {0, 0}, rng,
                  fmt::format("relays on one device {}", to_string(c)));
  }
}

}  // namespace
}  // namespace canopy::testing
