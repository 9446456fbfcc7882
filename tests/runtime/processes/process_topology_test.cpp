// process_ordinals (runtime/processes/process_topology.hpp), on any CPU: processes on different GPUs of one host map to
// this process's CUDA ordinals by UUID, in process order; every case detection cannot serve is refused naming the
// process and the fix.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/processes/process_topology.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

ProcessFacts process_on(int rank, const std::string& uuid, const std::string& host = "box") {
  ProcessFacts f;
  f.version = "1.2.3";
  f.host = host;
  f.pid = 100 + rank;
  f.first_rank = rank;
  f.ranks = 1;
  f.nranks = 3;
  f.gpu.uuid = uuid;
  f.gpu.name = "NVIDIA H200";
  return f;
}

std::vector<GpuDevice> visible(const std::vector<std::string>& uuids) {
  std::vector<GpuDevice> out;
  for (std::size_t i = 0; i < uuids.size(); ++i) {
    GpuDevice g;
    g.ordinal = static_cast<int>(i);
    g.uuid = uuids[i];
    out.push_back(g);
  }
  return out;
}

TEST(ProcessOrdinals, EachProcessIsTheOrdinalOfItsGpuInProcessOrder) {
  std::vector<int> ordinals;
  ASSERT_TRUE(process_ordinals({process_on(0, "cc"), process_on(1, "aa"), process_on(2, "bb")},
                               visible({"aa", "bb", "cc"}), &ordinals)
                  .ok());
  EXPECT_EQ(ordinals, (std::vector<int>{2, 0, 1}));
}

TEST(ProcessOrdinals, AGpuThisProcessCannotSeeIsNamedWithTheFix) {
  std::vector<int> ordinals;
  const Status s = process_ordinals({process_on(0, "aa"), process_on(1, "bb")}, visible({"aa"}), &ordinals);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("process 1 (rank 1) runs on GPU bb"));
  EXPECT_THAT(s.message(), HasSubstr("CUDA_VISIBLE_DEVICES"));
}

TEST(ProcessOrdinals, TwoProcessesOnOneGpuBesideOthersAreRefused) {
  std::vector<int> ordinals;
  const Status s = process_ordinals({process_on(0, "aa"), process_on(1, "bb"), process_on(2, "aa")},
                                    visible({"aa", "bb"}), &ordinals);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("process 2 (rank 2) and process 0 share GPU aa"));
}

TEST(ProcessOrdinals, SeveralHostsOrSeveralRanksPerProcessNeedATopology) {
  std::vector<int> ordinals;
  Status s = process_ordinals({process_on(0, "aa"), process_on(1, "bb", "other")}, visible({"aa", "bb"}), &ordinals);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("runs on host other, process 0 on host box"));
  ProcessFacts two = process_on(0, "aa");
  two.ranks = 2;
  s = process_ordinals({two, process_on(2, "bb")}, visible({"aa", "bb"}), &ordinals);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("holds 2 ranks"));
}

}  // namespace
}  // namespace canopy
