// Every shipped collective-algorithm program (dsl/algorithms/) through the Communicator on real GPUs (label gpu;
// SKIPPED without one), checked as the planned collectives are: pattern inputs, poisoned outputs, every element of
// every rank compared with the host reference of what the program computes (bench/harness/collective_check.hpp). Two
// ranks on h200x2 and eight on hgx-h200; ranks beyond the visible GPUs run as virtual ranks (eight on one H100).
// CANOPY_TEST_MAX_COUNT lowers the largest count for quick runs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "dsl/algorithms/shipped_algorithms.hpp"
#include "topology/shipped_topologies.hpp"
#include "tests/gpu/checked_program.hpp"

namespace canopy {
namespace {

struct AlgorithmOnTopology {
  const char* topology;
  std::string algorithm;
};
void PrintTo(const AlgorithmOnTopology& p, std::ostream* os) { *os << p.topology << " " << p.algorithm; }

class AlgorithmsOnGpu : public ::testing::TestWithParam<AlgorithmOnTopology> {};

TEST_P(AlgorithmsOnGpu, MatchWhatTheProgramComputes) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const Topology topology = load_topology(GetParam().topology);
  auto outputs =
      std::make_shared<ProgramOutputs>(algo::shipped_algorithm(GetParam().algorithm, topology.gpu_count()));
  testing::check_program_on_gpus(topology, {}, outputs,
                                 fmt::format("{} {}", GetParam().topology, outputs->program.name()));
}

std::vector<AlgorithmOnTopology> all_params() {
  std::vector<AlgorithmOnTopology> out;
  for (const char* topology : {"h200x2", "hgx-h200"}) {
    const int ranks = load_topology(topology).gpu_count();
    for (const algo::ShippedAlgorithm& a : algo::shipped_algorithms())
      if (a.supports(ranks)) out.push_back({topology, std::string(a.name)});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shipped, AlgorithmsOnGpu, ::testing::ValuesIn(all_params()), [](const auto& info) {
  return testing::test_name(std::string(info.param.topology) + "_" + info.param.algorithm);
});

}  // namespace
}  // namespace canopy
