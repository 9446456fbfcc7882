// Lowering collective-algorithm programs (codegen/lower_program.hpp), checked on the host model of the GPU protocol
// (schedule_simulator.hpp): every shipped algorithm, for several rank counts, delivers what its program computes
// (the checker's symbolic outputs) for counts with slice tails, across launches that reuse buffers, counters and
// scratch rings, on physical and virtual ranks, under random interleavings. Also: fusion, waits, refusals.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include "codegen/emit_cuda.hpp"
#include "codegen/lower_program.hpp"
#include "dsl/algorithm_check.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"
#include "planner/alltoall_program.hpp"
#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "tests/codegen/schedule_simulator.hpp"
#include "tests/test_util.hpp"

namespace canopy::testing {
namespace {

// Small slices, shallow rings and few blocks: short buffers still make many slices and ring wrap-arounds.
CodegenOptions small_options() {
  CodegenOptions o;
  o.chunk_bytes = 1024;  // 256 elements per slice
  o.fifo_depth = 2;
  o.blocks_per_rank = 4;
  return o;
}

double input_value(int launch, int rank, std::uint64_t j) {
  return static_cast<double>((rank * 7 + j * 13 + launch * 5) % 17) - 4;
}

// Runs `program` lowered with `options` for each count in turn (one launch each, shared buffers) and compares every
// output chunk the goal constrains with what the symbolic execution says it holds.
void run_program(const algo::Program& p, const Topology& topology, const CodegenOptions& options,
                 const std::vector<std::uint64_t>& counts, std::mt19937_64& rng, const std::string& what) {
  const Schedule s = lower_program(p, options, topology);
  const int n = p.ranks(), chunks = p.chunks();
  const int in_chunks = p.buffer_chunks(algo::Buffer::input), out_chunks = p.buffer_chunks(algo::Buffer::output);
  const std::vector<std::vector<algo::Contents>> contents = algo::output_contents(p);
  std::int64_t scratch = 1;
  for (const RankResources& r : s.resources) scratch = std::max(scratch, r.scratch_bytes);
  ScheduleSimulator sim(n, s.options.device_of_rank, scratch);
  std::uint64_t largest = 0;
  for (std::uint64_t count : counts) largest = std::max(largest, count / chunks * out_chunks);
  std::vector<int> recv;
  for (int r = 0; r < n; ++r) recv.push_back(sim.add_storage(std::vector<double>(largest + 64, -1e9)));
  std::vector<SimLaunch> launches;
  std::vector<std::vector<std::vector<double>>> inputs;  // [launch][rank]
  for (std::size_t k = 0; k < counts.size(); ++k) {
    ASSERT_EQ(counts[k] % chunks, 0u) << what;
    SimLaunch L;
    L.schedule = &s;
    L.count = counts[k];
    inputs.emplace_back();
    for (int r = 0; r < n; ++r) {
      std::vector<double> in(counts[k] / chunks * in_chunks);
      for (std::uint64_t j = 0; j < in.size(); ++j) in[j] = input_value(static_cast<int>(k), r, j);
      inputs.back().push_back(in);
      L.send.push_back({sim.add_storage(in), 0});
      L.recv.push_back({recv[r], 0});
    }
    launches.push_back(L);
  }
  int failures = 0;
  const std::string error = sim.run(launches, rng, [&](int k, int r) {
    const std::uint64_t unit = counts[k] / chunks;
    const std::vector<double>& out = sim.storage(recv[r]);
    for (int c = 0; c < out_chunks; ++c) {
      if (!algo::expected_output(p, r, c)) continue;
      for (std::uint64_t e = 0; e < unit; ++e) {
        bool first = true;
        double want = 0;
        for (const auto& [from, times] : contents[r][c])
          for (int t = 0; t < times; ++t) {
            const double v = inputs[k][from.first][from.second * unit + e];
            want = first ? v : want + v;
            first = false;
          }
        const double got = out[c * unit + e];
        if (got != want && failures++ < 5)
          ADD_FAILURE() << what << ": launch " << k << " (count " << counts[k] << ") rank " << r << " output chunk "
                        << c << " element " << e << ": " << got << ", expected " << want;
      }
    }
  });
  EXPECT_EQ(error, "") << what;
}

TEST(LowerProgram, EveryShippedAlgorithmDeliversWhatItsProgramComputes) {
  auto rng = seeded_rng("LowerProgram");
  const Topology hgx = load_topology("hgx-h200");
  for (const algo::ShippedAlgorithm& a : algo::shipped_algorithms())
    for (int n : {1, 2, 3, 4, 8}) {
      if (!a.supports(n)) continue;
      const algo::Program p = a.build(n);
      // Counts: one element per chunk, slice tails that do not fill a vector, several slices per block.
      const std::uint64_t c = p.chunks();
      for (int devices : {n, 1}) {
        CodegenOptions o = small_options();
        o.device_of_rank = block_placement(n, devices);
        run_program(p, hgx, o, {c, 37 * c, 1201 * c, 8 * c}, rng,
                    fmt::format("{} on {} ranks, {} devices", a.name, n, devices));
      }
    }
}

TEST(LowerProgram, TwoHostAlgorithmsRunOnSixteenRanks) {
  auto rng = seeded_rng("LowerProgram hosts");
  const Topology two_hosts = load_topology("dgx1-v100-x2");
  for (const algo::ShippedAlgorithm& a : algo::shipped_algorithms()) {
    if (!a.supports(16)) continue;
    const algo::Program p = a.build(16);
    CodegenOptions o = small_options();
    o.device_of_rank = block_placement(16, 4);
    run_program(p, two_hosts, o, {517 * static_cast<std::uint64_t>(p.chunks())}, rng,
                fmt::format("{} on dgx1-v100-x2", a.name));
  }
}

// The planned all-to-all (planner/alltoall_program.hpp): every pair's chunks along their routes, relayed through the
// scratch of the GPUs between, deliver every block, on physical and virtual ranks.
TEST(LowerProgram, PlannedAlltoallsDeliverEveryBlock) {
  auto rng = seeded_rng("LowerProgram alltoall");
  const Topology dgx1 = load_topology("dgx1-v100");
  PlanOptions four;
  four.gpus = {"0,1,4,5"};
  const std::pair<std::string, Topology> cases[] = {{"dgx1-v100", dgx1},
                                                    {"dgx1-v100 0,1,4,5", planning_topology(dgx1, four)},
                                                    {"hgx-h200", load_topology("hgx-h200")},
                                                    {"pcie-4gpu", load_topology("pcie-4gpu")}};
  for (const auto& [what, topology] : cases) {
    const AlltoallPlan plan = plan_alltoall(topology);
    const algo::Program p = alltoall_program(topology, plan);
    const std::uint64_t c = static_cast<std::uint64_t>(p.chunks());
    for (int devices : {p.ranks(), 1}) {
      CodegenOptions o = small_options();
      o.device_of_rank = block_placement(p.ranks(), devices);
      run_program(p, topology, o, {c, 37 * c, 1201 * c}, rng, fmt::format("alltoall on {}, {} devices", what, devices));
    }
  }
}

TEST(LowerProgram, DeepRingsAndOneBlockStillPipeline) {
  auto rng = seeded_rng("LowerProgram depth");
  const algo::Program p = algo::shipped_algorithm("ring-allreduce", 4);
  for (int depth : {1, 3})
    for (int blocks : {1, 2}) {
      CodegenOptions o = small_options();
      o.fifo_depth = depth;
      o.blocks_per_rank = blocks;
      run_program(p, load_topology("hgx-h200"), o, {4 * 1301, 4}, rng,
                  fmt::format("ring-allreduce depth {} blocks {}", depth, blocks));
    }
}

TEST(LowerProgram, ScratchRingsWaitForTheirLastReader) {
  // Depth 1: a slice's scratch slot is rewritten by the next slice, so a writer that ran ahead of the reader on the
  // other host would overwrite data not yet reduced; one block and many slices give it every chance to.
  auto rng = seeded_rng("LowerProgram scratch");
  const algo::Program p = algo::shipped_algorithm("hierarchical-allreduce", 4);
  CodegenOptions o = small_options();
  o.fifo_depth = 1;
  o.blocks_per_rank = 1;
  for (int round = 0; round < 20; ++round)
    run_program(p, load_topology("hgx-h200"), o, {2 * 256 * 40}, rng, "hierarchical-allreduce depth 1");
}

TEST(LowerProgram, FusesReceiveReduceSend) {
  const algo::Program p = algo::ring_allreduce(4);
  const Schedule s = lower_program(p, small_options(), load_topology("hgx-h200"));
  ASSERT_TRUE(s.program);
  EXPECT_EQ(s.program->statements, static_cast<int>(p.ops().size()));
  // Each chunk's trip: 3 reduce hops, each fused with the copy after it, and the last reduce with its first
  // forward; so 4 chunks x (1 copy + 3 fused reduce-forwards + 2 forwards).
  EXPECT_EQ(s.program->steps, 4 * 6);
  int fused = 0;
  for (const Lane& lane : s.lanes)
    for (const Step& step : lane.per_chunk)
      if (step.kind == StepKind::reduce_copy && step.sources.size() == 2 && step.destinations.size() == 2) ++fused;
  EXPECT_EQ(fused, 4 * 3);
  const std::string source = emit_cuda(s).file.text;
  EXPECT_NE(source.find("reduce_copy_n<Op, T, 2, 2>"), std::string::npos);
  EXPECT_NE(source.find("// algorithm    ring-allreduce (allreduce) over 4 ranks"), std::string::npos);
  EXPECT_NE(s.dump().find("channel 1 on"), std::string::npos);
}

TEST(LowerProgram, LanesAreRanksTimesChannelsAndWaitOnlyAcrossLanes) {
  const Schedule s = lower_program(algo::ring_allreduce(4), small_options(), load_topology("hgx-h200"));
  EXPECT_EQ(s.lanes.size(), 8u);  // 4 ranks x 2 channels
  for (const Lane& lane : s.lanes) {
    EXPECT_EQ(lane.blocks, 2);  // 4 blocks per rank over 2 lanes
    EXPECT_EQ(lane.range.units, 4);
    for (const Step& step : lane.per_chunk)
      if (step.kind == StepKind::wait) {
        EXPECT_EQ(step.flag.rank, lane.rank) << "waits poll local counters";
      }
  }
}

TEST(LowerProgram, RefusesWhatDoesNotVerify) {
  algo::Program p("broken", Collective::allreduce, 2, 1);
  p.input(0, 0).copy(p.output(1, 0));
  try {
    lower_program(p, small_options(), load_topology("hgx-h200"));
    FAIL() << "lowered a program that does not verify";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not verify on hgx-h200"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("broken:"), std::string::npos) << e.what();
  }
  // More ranks than the topology has GPUs.
  EXPECT_THROW(lower_program(algo::ring_allreduce(16), small_options(), load_topology("hgx-h200")), Error);
}

}  // namespace
}  // namespace canopy::testing
