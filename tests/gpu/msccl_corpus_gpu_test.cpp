// The msccl-tools corpus on real GPUs (label gpu; SKIPPED without one): every program of tests/data/msccl-tools/ that
// computes one of Canopy's collectives (custom collectives and the four known-wrong programs left out, see
// tests/dsl/msccl_corpus_test.cpp) imported and run through the C++ API on its own rank count, every element of every
// rank checked against what the program computes (tests/gpu/checked_program.hpp). The ranks are GPUs of dgx2 (one
// NVSwitch: every pair joined, as msccl-tools' examples assume), on the visible GPUs (virtual ranks beyond them).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "dsl/msccl_xml.hpp"
#include "topology/shipped_topologies.hpp"
#include "tests/gpu/checked_program.hpp"

namespace canopy {
namespace {

std::filesystem::path corpus_dir() { return testing::source_dir() / "tests" / "data" / "msccl-tools"; }

// The corpus files this test runs: not custom, not known to be wrong.
std::vector<std::string> runnable() {
  const std::regex wrong("allreduce_a100_pcie_hierarchical_8r_1i|allgather_recursive_doubling_16r_2i_LL128|"
                         "pipeline_a100_.*");
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(corpus_dir())) {
    if (entry.path().extension() != ".xml") continue;
    const std::string name = entry.path().stem().string();
    if (std::regex_match(name, wrong)) continue;
    if (testing::read_file(entry.path()).find("coll=\"custom\"") != std::string::npos) continue;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

class MscclCorpusOnGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(MscclCorpusOnGpu, ComputesItsCollective) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const std::filesystem::path file = corpus_dir() / (GetParam() + ".xml");
  auto outputs = std::make_shared<ProgramOutputs>(algo::from_msccl_xml(testing::read_file(file), file.string()));
  std::vector<std::string> gpus;
  for (int r = 0; r < outputs->program.ranks(); ++r) gpus.push_back(std::to_string(r));
  testing::check_program_on_gpus(load_topology("dgx2"), gpus, outputs, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Corpus, MscclCorpusOnGpu, ::testing::ValuesIn(runnable()),
                         [](const auto& info) { return testing::test_name(info.param); });

}  // namespace
}  // namespace canopy
