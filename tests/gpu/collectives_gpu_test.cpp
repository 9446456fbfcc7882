// Every collective x dtype x op through the Communicator on real GPUs (label gpu; SKIPPED without one), as
// nccl-tests checks NCCL: counts {1, 7, 1000, 2^20+3, 2^26}, in and out of place, pattern inputs (never zeros),
// outputs poisoned before each run, every element of every rank compared with the host reference. Topologies
// with more ranks than GPUs run as virtual ranks (the 8-rank dgx1-v100 plan on one H100), so machines we cannot
// rent are checked for correctness. A run whose buffers exceed the GPUs' memory is reported and left out.
// CANOPY_TEST_MAX_COUNT lowers the largest count for quick runs.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <random>

#include "topology/shipped_topologies.hpp"
#include "topology/topo_writer.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/jit/jit.hpp"
#include "tests/gpu/checked_sweep.hpp"
#include "tests/gpu/topology_collective_param.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

// An irregular machine: 6 GPUs, a random spanning tree of NVLink bundles (1-4 lanes), a few extra bundles, one
// one-way degraded lane, every GPU on a PCIe switch. Seeded; the seed is printed.
Topology random_irregular(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Topology t(fmt::format("random-{}", seed));
  const auto g = t.gpus(6);
  const NodeId plx = t.relay("plx0");
  for (int v = 1; v < 6; ++v) {
    const int u = static_cast<int>(rng() % v);
    t.link(g[u], g[v], nvlink3 * static_cast<int>(1 + rng() % 4));
  }
  for (int k = 0; k < 3; ++k) {
    const int a = static_cast<int>(rng() % 6), b = static_cast<int>(rng() % 6);
    if (a != b) t.link(g[a], g[b], nvlink3 * static_cast<int>(1 + rng() % 2));
  }
  t.arc(g[rng() % 3], g[3 + rng() % 3], {12.5, "nvlink3"});
  for (NodeId gpu : g) t.link(gpu, plx, pcie4);
  t.validate();
  return t;
}

struct Case {
  const char* name;
  std::function<Topology()> topology;
};

std::uint64_t random_seed() {
  const char* s = std::getenv("CANOPY_TEST_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 20261122;
}

const Case kCases[] = {
    {"h200x2", [] { return load_topology("h200x2"); }},
    {"dgx1_v100", [] { return load_topology("dgx1-v100"); }},
    {"dgx2", [] { return load_topology("dgx2"); }},
    {"hgx_h200", [] { return load_topology("hgx-h200"); }},
    {"random_irregular", [] { return random_irregular(random_seed()); }},
};

using Param = testing::TopologyCollective;

class CollectivesOnGpu : public ::testing::TestWithParam<Param> {};

TEST_P(CollectivesOnGpu, MatchTheHostReference) {
  const int gpus = visible_gpu_count();
  if (gpus == 0) GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const Case& tc = kCases[GetParam().topology];
  const Collective collective = GetParam().collective;
  const Topology topology = tc.topology();
  if (std::string(tc.name) == "random_irregular")
    std::cout << "[ seed ] random irregular topology: CANOPY_TEST_SEED=" << random_seed() << "\n"
              << write_topo(topology);
  const int ranks = topology.gpu_count();
  CommunicatorOptions o;
  o.topology = topology;
  for (int d = 0; d < std::min(gpus, ranks); ++d) o.devices.push_back(d);
  std::unique_ptr<Communicator> comm;
  ASSERT_TRUE(Communicator::create(o, &comm).ok()) << Communicator::create(o, &comm).message();

  const std::vector<CollectiveSpec> specs = testing::every_type_and_op(collective, ranks);  // root: the last rank
  const auto t0 = std::chrono::steady_clock::now();
  const Status prepared = comm->prepare(specs);
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Buffers for the largest count in the widest type, as far as the GPUs' memory allows.
  const std::uint64_t top = testing::test_max_count();
  const std::uint64_t send_mult = collective == Collective::reducescatter ? ranks : 1;
  const std::uint64_t recv_mult = collective == Collective::allgather ? ranks : 1;
  int ranks_per_gpu = (ranks + comm->devices() - 1) / comm->devices();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  const std::uint64_t budget =
      static_cast<std::uint64_t>(prop.totalGlobalMem * testing::test_memory_fraction(0.7)) / ranks_per_gpu;
  std::uint64_t bytes_per_elem_slot = 8 * (send_mult + recv_mult);
  std::uint64_t capacity = std::min(top, budget / bytes_per_elem_slot);
  Jit jit(DiskCache::from_environment());
  PatternKernels patterns(jit, fmt::format("sm_{}{}", prop.major, prop.minor));
  std::unique_ptr<CollectiveBuffers> buffers;
  const Status made = CollectiveBuffers::create(*comm, capacity * 8 * send_mult, capacity * 8 * recv_mult, patterns,
                                                &buffers);
  ASSERT_TRUE(made.ok()) << made.message();

  int runs = 0;
  std::vector<std::string> left_out;
  std::uint64_t elements = 0;
  for (const CollectiveSpec& spec : specs)
    for (std::uint64_t count : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{1000}, (std::uint64_t{1} << 20) + 3,
                                std::uint64_t{1} << 26}) {
      if (count > top) continue;
      for (bool in_place : {false, true}) {
        CheckSpec s{collective, spec.dtype, spec.op, spec.root, ranks, count, 0};
        s.seed = (static_cast<std::uint64_t>(runs) + 1) * 0x9E3779B97F4A7C15ull ^ random_seed();
        if (!buffers->fits(s)) {
          if (!in_place)
            left_out.push_back(fmt::format("{} {} count {}", to_string(spec.dtype), to_string(spec.op), count));
          continue;
        }
        CheckResult result;
        const Status st = buffers->run_checked(*comm, s, in_place, &result);
        ASSERT_TRUE(st.ok()) << st.message();
        ++runs;
        elements += result.checked;
        EXPECT_EQ(result.wrong, 0u) << tc.name << " " << to_string(collective) << " " << to_string(spec.dtype) << " "
                                    << to_string(spec.op) << " count " << count << (in_place ? " in place" : "")
                                    << ": " << result.wrong << " of " << result.checked << " elements wrong, e.g. "
                                    << (result.examples.empty() ? "" : result.examples[0]);
      }
    }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("[ runs ] {} {}: {} ranks on {} GPUs, {} runs, {} elements checked, {} kernels ready in "
                           "{:.1f} s, {:.1f} s in all\n",
                           tc.name, to_string(collective), ranks, comm->devices(), runs, elements, specs.size(),
                           compile_s, total_s);
  if (!left_out.empty())
    std::cout << fmt::format("[ note ] left out, more than {:.0f}% of GPU memory ({} GiB): {}\n",
                             100 * testing::test_memory_fraction(0.7), prop.totalGlobalMem >> 30,
                             fmt::join(left_out, "; "));
}

INSTANTIATE_TEST_SUITE_P(Topologies, CollectivesOnGpu, ::testing::ValuesIn(testing::every_collective_of(kCases)),
                         [](const auto& info) { return testing::topology_collective_name(kCases, info.param); });

}  // namespace
}  // namespace canopy
