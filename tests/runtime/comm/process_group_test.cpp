// ProcessFacts and the placement of ranks on processes (runtime/comm/process_group.hpp), on any CPU: the facts survive
// their text form, a group whose processes would plan differently is refused naming the process and the fix, and each
// process becomes one device index that only it launches, processes on one GPU able to reach each other.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "topology/topo_writer.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/jit/launch_shape.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

ProcessFacts facts(int first_rank, int ranks, int nranks, const std::string& uuid = "aa") {
  ProcessFacts f;
  f.version = "1.2.3";
  f.host = "box";
  f.pid = 100 + first_rank;
  f.first_rank = first_rank;
  f.ranks = ranks;
  f.nranks = nranks;
  f.gpu.ordinal = 0;
  f.gpu.name = "NVIDIA H100 80GB HBM3";
  f.gpu.arch = "sm_90";
  f.gpu.uuid = uuid;
  f.gpu.limits.sms = 132;
  f.gpu.memory_bytes = 85000000000;
  f.plan_key = "0123456789abcdef0123";
  return f;
}

TEST(ProcessFacts, SurviveTheirTextForm) {
  const ProcessFacts f = facts(2, 2, 4, "f00d");
  ProcessFacts back;
  ASSERT_TRUE(decode_process_facts(encode_process_facts(f), &back).ok());
  EXPECT_EQ(back.version, f.version);
  EXPECT_EQ(back.host, f.host);
  EXPECT_EQ(back.pid, f.pid);
  EXPECT_EQ(back.first_rank, 2);
  EXPECT_EQ(back.ranks, 2);
  EXPECT_EQ(back.nranks, 4);
  EXPECT_EQ(back.gpu.name, f.gpu.name);
  EXPECT_EQ(back.gpu.uuid, "f00d");
  EXPECT_EQ(back.gpu.limits.sms, 132);
  EXPECT_EQ(back.gpu.memory_bytes, f.gpu.memory_bytes);
  EXPECT_EQ(back.plan_key, f.plan_key);
  EXPECT_EQ(back.gpu_sharers, 0);
  ProcessFacts shared = f;
  shared.gpu_sharers = 6;
  ASSERT_TRUE(decode_process_facts(encode_process_facts(shared), &back).ok());
  EXPECT_EQ(back.gpu_sharers, 6);
}

TEST(ProcessFacts, GpuSharersAreOptionalAndNeverNegative) {
  ProcessFacts back;
  std::string text = encode_process_facts(facts(0, 1, 2));
  const std::size_t at = text.find("gpu_sharers=");
  ASSERT_NE(at, std::string::npos);
  ASSERT_TRUE(decode_process_facts(text.substr(0, at), &back).ok());  // as an older process writes them
  EXPECT_EQ(back.gpu_sharers, 0);
  EXPECT_THAT(decode_process_facts(text.substr(0, at) + "gpu_sharers=-2\n", &back).message(),
              HasSubstr("'gpu_sharers' is -2, below 0"));
}

TEST(ProcessFacts, AMissingOrMalformedFieldIsNamed) {
  ProcessFacts back;
  std::string text = encode_process_facts(facts(0, 1, 2));
  const Status missing = decode_process_facts(text.substr(0, text.find("plan_key")), &back);
  EXPECT_THAT(missing.message(), HasSubstr("'plan_key' is missing"));
  text.replace(text.find("pid=100"), 7, "pid=x");
  EXPECT_THAT(decode_process_facts(text, &back).message(), HasSubstr("'pid' is 'x', not a number"));
  EXPECT_THAT(decode_process_facts("garbage", &back).message(), HasSubstr("has no '='"));
}

TEST(ProcessFacts, AGroupThatWouldPlanAlikeIsAccepted) {
  EXPECT_TRUE(check_process_facts({facts(0, 1, 3), facts(1, 1, 3), facts(2, 1, 3)}).ok());
  EXPECT_TRUE(check_process_facts({facts(0, 2, 4), facts(2, 2, 4)}).ok());
}

TEST(ProcessFacts, AnotherVersionIsRefusedNamingTheProcess) {
  std::vector<ProcessFacts> all = {facts(0, 1, 2), facts(1, 1, 2)};
  all[1].version = "9.9.9";
  const Status s = check_process_facts(all);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_THAT(s.message(), HasSubstr("process 1 (rank 1, pid 101 on host box) runs Canopy 9.9.9"));
  EXPECT_THAT(s.message(), HasSubstr("run one build of Canopy in every process"));
}

TEST(ProcessFacts, AnotherPlanKeyIsRefused) {
  std::vector<ProcessFacts> all = {facts(0, 1, 2), facts(1, 1, 2)};
  all[1].plan_key = "ffffffffffffffffffff";
  EXPECT_THAT(check_process_facts(all).message(), HasSubstr("would plan differently"));
}

TEST(ProcessFacts, DuplicateMissingOrExtraRanksAreRefused) {
  EXPECT_THAT(check_process_facts({facts(0, 1, 2), facts(0, 1, 2)}).message(),
              HasSubstr("duplicate or missing rank"));
  EXPECT_THAT(check_process_facts({facts(0, 1, 3), facts(1, 1, 3)}).message(),
              HasSubstr("the processes hold 2 ranks but the communicator has 3"));
  EXPECT_THAT(check_process_facts({facts(0, 1, 2), facts(1, 1, 3)}).message(), HasSubstr("pass the same nranks"));
}

TEST(ProcessFacts, AProcessIsDescribedByItsRanksAndWhereItRuns) {
  EXPECT_EQ(describe_process(facts(1, 1, 2), 1, false), "process 1 (rank 1)");
  EXPECT_EQ(describe_process(facts(2, 2, 4), 1, true), "process 1 (ranks 2..3, pid 102 on host box)");
}

// The host identity (CANOPY_HOST_ID, or hostname:boot id) tells hosts apart; messages name the hostname.
TEST(ProcessFacts, TheHostnameTravelsBesideTheHostIdentityForMessages) {
  ProcessFacts f = facts(2, 2, 4);
  f.host = "box:4c1f";
  f.hostname = "box";
  ProcessFacts back;
  ASSERT_TRUE(decode_process_facts(encode_process_facts(f), &back).ok());
  EXPECT_EQ(back.host, "box:4c1f");
  EXPECT_EQ(back.hostname, "box");
  EXPECT_EQ(describe_process(back, 1, true), "process 1 (ranks 2..3, pid 102 on host box)");
}

TEST(SharedGpuTopology, EveryRankIsOneNvlinkHopFromEveryOther) {
  const Topology t = shared_gpu_topology(3);
  EXPECT_EQ(t.name(), "shared-gpu-3");
  EXPECT_EQ(t.gpu_count(), 3);
  const std::vector<NodeId> gpus = t.gpu_ids();
  for (NodeId a : gpus)
    for (NodeId b : gpus)
      if (a != b) {
        const std::vector<NodeId> path = switch_path(t, a, b, [](const Arc& arc) { return is_nvlink(arc); });
        EXPECT_EQ(path.size(), 3u);  // gpu, the memory switch, gpu
      }
  EXPECT_NO_THROW(write_topo(t));
  EXPECT_NO_THROW(write_topo(Topology("unset")));  // the plan key of a join without a topology hashes this
}

TEST(SharedGpuTopology, OneGpuIsTheSameUuidEverywhere) {
  EXPECT_TRUE(one_gpu({facts(0, 1, 2, "aa"), facts(1, 1, 2, "aa")}));
  EXPECT_FALSE(one_gpu({facts(0, 1, 2, "aa"), facts(1, 1, 2, "bb")}));
}

TEST(PlanSplit, ProcessesOfAColorAreOrderedByKeyThenProcess) {
  // Processes 0..4 with colors 1, 0, 1, -1, 1 and keys 5, 0, 5, 0, 2.
  const std::vector<SplitPlace> places = plan_split({{1, 5}, {0, 0}, {1, 5}, {-1, 0}, {1, 2}});
  EXPECT_EQ(places[4].index, 0);  // key 2 first
  EXPECT_EQ(places[0].index, 1);  // key 5, process 0 before process 2
  EXPECT_EQ(places[2].index, 2);
  for (int p : {0, 2, 4}) {
    EXPECT_EQ(places[p].size, 3);
    EXPECT_EQ(places[p].leader, 4);
    EXPECT_EQ(places[p].color, 1);
  }
  EXPECT_EQ(places[1].size, 1);
  EXPECT_EQ(places[1].index, 0);
  EXPECT_EQ(places[1].leader, 1);
  EXPECT_EQ(places[3].color, -1);  // no group
  EXPECT_EQ(places[3].size, 0);
}

TEST(PlanSplit, AColorBelowMinusOneIsNamed) {
  try {
    plan_split({{0, 0}, {-2, 0}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("process 1 gave color -2"));
  }
}

TEST(PlaceProcesses, EachProcessIsOneDeviceIndexLaunchedOnlyThere) {
  const std::vector<ProcessFacts> all = {facts(0, 2, 4, "aa"), facts(2, 2, 4, "aa")};
  std::vector<ProcessFacts> mine = all;
  mine[1].gpu.ordinal = 3;  // the other process's ordinal is its own business
  const Placement p = place_processes({"gpu0", "gpu1", "gpu2", "gpu3"}, mine, 1, {});
  EXPECT_EQ(p.devices(), 2);
  EXPECT_EQ(p.device_of_rank, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(p.first_rank, (std::vector<int>{0, 2}));
  EXPECT_EQ(p.here, (std::vector<char>{0, 1}));
  EXPECT_TRUE(p.multi_process());
  EXPECT_FALSE(p.launches(0));
  EXPECT_TRUE(p.launches(1));
  EXPECT_EQ(p.ordinal_of_rank, (std::vector<int>{3, 3, 3, 3}));  // this process's GPU stands in for every one
  EXPECT_TRUE(p.peer[0][1]);  // one GPU: the processes reach each other's memory
}

TEST(PlaceProcesses, OtherGpusAreReachedWhereTheCallbackSays) {
  const std::vector<ProcessFacts> all = {facts(0, 1, 3, "aa"), facts(1, 1, 3, "bb"), facts(2, 1, 3, "cc")};
  const Placement p = place_processes({"gpu0", "gpu1", "gpu2"}, all, 0, [](const std::string& a, const std::string& b) {
    return (a == "aa" && b == "bb") || (a == "bb" && b == "aa");
  });
  EXPECT_TRUE(p.peer[0][1]);
  EXPECT_TRUE(p.peer[1][0]);
  EXPECT_FALSE(p.peer[0][2]);
  EXPECT_TRUE(p.peer[2][2]);
}

TEST(PlaceProcesses, ProcessesSharingAGpuShareItsSms) {
  // Under MPS the grids of processes on one GPU run at once and spin on each other: each fits its share.
  const std::vector<ProcessFacts> all = {facts(0, 1, 4, "aa"), facts(1, 1, 4, "aa"), facts(2, 1, 4, "aa"),
                                         facts(3, 1, 4, "bb")};
  const Placement p = place_processes({"gpu0", "gpu1", "gpu2", "gpu3"}, all, 0, {});
  EXPECT_EQ(p.gpus[0].limits.sms, 44);
  EXPECT_EQ(p.gpus[2].limits.sms, 44);
  EXPECT_EQ(p.gpus[3].limits.sms, 132);  // alone on its GPU: all of it
  // ... at one block per SM of the share, so that the sharers' blocks together never outnumber the SMs
  EXPECT_EQ(p.gpus[0].limits.preferred_blocks_per_sm, 1);
  EXPECT_EQ(p.gpus[3].limits.preferred_blocks_per_sm, 0);
}

TEST(PlaceProcesses, TreesOfProcessesSharingAGpuTakeOneBlockPerSmOfTheirShare) {
  // 4 processes on one 132-SM GPU: trees that would take 64 blocks at 2 per SM of a 33-SM share are halved to 32,
  // so the 4 grids (128 blocks) fit the 132 SMs at one block each whatever else runs beside them.
  std::vector<ProcessFacts> all;
  for (int k = 0; k < 4; ++k) all.push_back(facts(k, 1, 4, "aa"));
  const Placement p = place_processes({"gpu0", "gpu1", "gpu2", "gpu3"}, all, 0, {});
  const std::vector<DeviceLimits> limits = {p.gpus[0].limits};
  CodegenOptions o;
  o.blocks_per_rank = 64;
  o.threads_per_block = 512;
  const auto one_device_of = [](int blocks) {
    return [blocks](const CodegenOptions& at) {
      Schedule s;
      DeviceSchedule d;
      d.device = 0;
      d.ranks = {0};
      d.blocks = blocks * at.blocks_per_rank / 64;
      s.devices.push_back(d);
      return s;
    };
  };
  const CodegenOptions fitted = fit_launch_shape(one_device_of(64), o, limits);
  EXPECT_EQ(fitted.blocks_per_rank, 32);
  EXPECT_EQ(fitted.min_blocks_per_sm, 0);  // one block per SM: no register cap
  DeviceLimits alone;  // one process on the GPU: two blocks per SM are fine
  alone.sms = 33;
  EXPECT_EQ(fit_launch_shape(one_device_of(64), o, {alone}).blocks_per_rank, 64);
}

TEST(PlaceProcesses, LanesThatCannotFitOnePerSmOfTheShareTakeTwo) {
  // 8 processes: a 16-SM share; an allreduce whose 25 lanes need 25 blocks at the least fits only at two per SM.
  std::vector<ProcessFacts> all;
  std::vector<std::string> names;
  for (int k = 0; k < 8; ++k) {
    all.push_back(facts(k, 1, 8, "aa"));
    names.push_back("gpu" + std::to_string(k));
  }
  const Placement p = place_processes(names, all, 0, {});
  ASSERT_EQ(p.gpus[0].limits.sms, 16);
  CodegenOptions o;
  o.blocks_per_rank = 4;
  o.threads_per_block = 512;
  const auto lanes_25 = [](const CodegenOptions& at) {  // 25 lanes, blocks_per_rank blocks each
    Schedule s;
    DeviceSchedule d;
    d.ranks = {0};
    d.blocks = 25 * at.blocks_per_rank;
    s.devices.push_back(d);
    return s;
  };
  const CodegenOptions fitted = fit_launch_shape(lanes_25, o, {p.gpus[0].limits});
  EXPECT_EQ(fitted.blocks_per_rank, 1);
  EXPECT_EQ(fitted.min_blocks_per_sm, 2);
}

TEST(PlaceProcesses, AGpuSharedBeyondTheCommunicatorTakesTheLargestCountGiven) {
  // Two processes of this communicator on GPU aa, while a split sibling's two run there too: one of them says 4.
  std::vector<ProcessFacts> all = {facts(0, 1, 3, "aa"), facts(1, 1, 3, "aa"), facts(2, 1, 3, "bb")};
  EXPECT_EQ(gpu_sharers(all, "aa"), 2);
  EXPECT_EQ(gpu_sharers(all, "bb"), 1);
  EXPECT_EQ(gpu_sharers(all, "cc"), 1);  // no process there: at least one
  all[1].gpu_sharers = 4;
  EXPECT_EQ(gpu_sharers(all, "aa"), 4);
  const Placement p = place_processes({"gpu0", "gpu1", "gpu2"}, all, 0, {});
  EXPECT_EQ(p.gpus[0].limits.sms, 33);
  EXPECT_EQ(p.gpus[1].limits.sms, 33);
  EXPECT_EQ(p.gpus[0].limits.preferred_blocks_per_sm, 1);
  EXPECT_EQ(p.gpus[2].limits.sms, 132);  // alone on bb
  EXPECT_THAT(describe_process_placement(p), HasSubstr("GPU aa, a share of 33 SMs): gpu0"));  // the init log line's
  all[2].gpu_sharers = 2;  // another job on bb (CANOPY_GPU_SHARERS=2)
  const Placement q = place_processes({"gpu0", "gpu1", "gpu2"}, all, 0, {});
  EXPECT_EQ(q.gpus[2].limits.sms, 66);
  EXPECT_EQ(q.gpus[2].limits.preferred_blocks_per_sm, 1);
}

TEST(PlaceProcesses, ACommunicatorMadeFromAGroupInheritsItsGpuSharers) {
  // split() children and each host's inside communicator: every member on this process's GPU counts, and the new
  // communicator's own option where larger.
  ProcessGroup group;
  group.process = 1;
  group.facts = {facts(0, 1, 3, "aa"), facts(1, 1, 3, "aa"), facts(2, 1, 3, "bb")};
  EXPECT_EQ(inherited_gpu_sharers(group, std::nullopt), 2);
  EXPECT_EQ(inherited_gpu_sharers(group, 1), 2);
  EXPECT_EQ(inherited_gpu_sharers(group, 5), 5);
  group.facts[0].gpu_sharers = 3;  // a member's CANOPY_GPU_SHARERS
  EXPECT_EQ(inherited_gpu_sharers(group, std::nullopt), 3);
  group.process = 2;  // alone on bb
  EXPECT_EQ(inherited_gpu_sharers(group, std::nullopt), 1);
}

TEST(PlaceProcesses, MoreRanksThanTheListIsAnError) {
  EXPECT_THROW(place_processes({"gpu0"}, {facts(0, 1, 2), facts(1, 1, 2)}, 0, {}), Error);
}

}  // namespace
}  // namespace canopy
