// place_relays: Blink+'s relays of a one-process communicator placed on its devices (by default relay k on device k
// modulo the devices, else the given CUDA ordinals), in topology order, and every refusal naming the item and the fix;
// with the planner's relay_gpus, which limits relaying to them, and the plan cache and peer check that use both.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>

#include "codegen/lower.hpp"
#include "codegen/relay_memory.hpp"
#include "core/error.hpp"
#include "planner/plan_eval.hpp"
#include "planner/planner.hpp"
#include "runtime/comm/peer_access_check.hpp"
#include "runtime/comm/relay_placement.hpp"
#include "runtime/jit/launch_shape.hpp"
#include "runtime/launch/prepared_collective.hpp"
#include "runtime/local/relay_scratch.hpp"
#include "runtime/plan/plan_cache.hpp"
#include "tests/runtime/comm/described_gpus.hpp"
#include "topology/shipped_topologies.hpp"

namespace canopy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing::described_gpus;

std::string placing_error(const Topology& t, const Placement& given, const std::vector<std::string>& relays,
                          const std::vector<int>& ordinals) {
  Placement p = given;
  try {
    place_relays(t, relays, ordinals, &p);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RelayPlacement, RelaysRunOnTheCommunicatorsDevicesInTopologyOrder) {
  const Topology t = load_topology("dgx1-v100");
  Placement one = place_ranks(t, described_gpus(1), {"0", "1"}, true);  // virtual GPUs: everything on device 0
  place_relays(t, {"gpu5", "2", "gpu3"}, {}, &one);
  EXPECT_THAT(one.relay_names, ElementsAre("gpu2", "gpu3", "gpu5"));
  EXPECT_THAT(one.device_of_relay, ElementsAre(0, 0, 0));

  Placement two = place_ranks(t, described_gpus(2), {"0", "1"}, true);
  place_relays(t, {"gpu2", "gpu3", "gpu4"}, {}, &two);  // k modulo the devices, as given
  EXPECT_THAT(two.device_of_relay, ElementsAre(0, 1, 0));
  place_relays(t, {"gpu4", "gpu2"}, {0, 1}, &two);  // ordinals pair with the relays as given
  EXPECT_THAT(two.relay_names, ElementsAre("gpu2", "gpu4"));
  EXPECT_THAT(two.device_of_relay, ElementsAre(1, 0));
  place_relays(t, {}, {}, &two);
  EXPECT_TRUE(two.relay_names.empty());
}

TEST(RelayPlacement, BadRelaysAreNamedWithTheFix) {
  const Topology t = load_topology("dgx1-v100");
  const Placement p = place_ranks(t, described_gpus(2), {"0", "1"}, true);
  EXPECT_THAT(placing_error(t, p, {"gpu1"}, {}), HasSubstr("relay gpu1 is also a rank of this communicator"));
  EXPECT_THAT(placing_error(t, p, {"gpu9"}, {}), HasSubstr("relays gpu9: --gpus: 'gpu9' is not a node"));
  EXPECT_THAT(placing_error(t, p, {"gpu2", "2"}, {}), HasSubstr("gpu2 is listed twice"));
  EXPECT_THAT(placing_error(t, p, {"gpu2", "gpu3"}, {0}), HasSubstr("1 relay devices given for 2 relays"));
  EXPECT_THAT(placing_error(t, p, {"gpu2"}, {5}),
              HasSubstr("relay gpu2 is placed on CUDA device 5, which runs none of this communicator's ranks"));
  EXPECT_THAT(placing_error(t, p, {}, {0}), HasSubstr("relay devices 0 are given without relays"));
}

TEST(RelayPlanning, RelayGpusLimitWhichGpusForward) {
  const Topology t = load_topology("dgx1-v100");
  PlanOptions o;
  o.gpus = {"gpu0", "gpu1"};
  o.relay = true;
  const Plan any = plan(t, Collective::allreduce, o);
  const std::vector<std::string> any_relays = relay_gpus_of(any, t);
  ASSERT_FALSE(any_relays.empty());
  o.relay_gpus = {"gpu2", "gpu3"};
  const Plan two = plan(t, Collective::allreduce, o);
  for (const std::string& relay : relay_gpus_of(two, t)) EXPECT_TRUE(relay == "gpu2" || relay == "gpu3") << relay;
  EXPECT_FALSE(relay_gpus_of(two, t).empty());
  EXPECT_LE(two.algbw_gbps, any.algbw_gbps + 1e-9);  // fewer relays never plan faster
  PlanOptions alone;
  alone.gpus = o.gpus;
  EXPECT_GT(two.algbw_gbps, plan(t, Collective::allreduce, alone).algbw_gbps);  // but faster than none

  PlanOptions off = o;
  off.relay = false;
  EXPECT_THROW(
      {
        try {
          (void)plan(t, Collective::allreduce, off);
        } catch (const Error& e) {
          EXPECT_THAT(e.what(), HasSubstr("relay GPUs gpu2,gpu3 are given but relaying is off"));
          throw;
        }
      },
      Error);
  PlanOptions rank_relay = o;
  rank_relay.relay_gpus = {"gpu1"};
  try {
    (void)plan(t, Collective::allreduce, rank_relay);
    ADD_FAILURE() << "a rank taken as a relay";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("relay GPU gpu1 is also a rank"));
  }
}

TEST(RelayPlanning, ThePlanCachePlansThroughTheCommunicatorsRelaysOnly) {
  const Topology t = load_topology("dgx1-p100");
  const std::vector<std::string> ranks{"gpu0", "gpu1"};
  const std::vector<std::string> relays{"gpu2", "gpu3"};
  PlanCache cache(t, ranks, 1, Logger(), relays);
  const Plan& p = cache.plan_for(Collective::broadcast, 0);
  const std::vector<std::string> used = relay_gpus_of(p, t);
  ASSERT_FALSE(used.empty());
  for (const std::string& relay : used) EXPECT_TRUE(relay == "gpu2" || relay == "gpu3") << relay;
  EXPECT_NO_THROW(check_relay_gpus(p, t, relays, "fix"));
  try {
    check_relay_gpus(p, t, {"gpu7"}, "add it");
    ADD_FAILURE() << "a plan through gpu2 or gpu3 passed with only gpu7 allowed";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("a GPU outside the ranks and not one of the relays (gpu7): add it"));
  }
  PlanCache without(t, ranks, 1, Logger());
  EXPECT_TRUE(relay_gpus_of(without.plan_for(Collective::broadcast, 0), t).empty());
}

TEST(RelayPlanning, RelayHopsNeedPeerAccess) {
  const Topology t = load_topology("dgx1-p100");
  static const std::vector<std::string> ranks{"gpu0", "gpu1"}, relays{"gpu2", "gpu3"};
  PlanCache relayed(t, ranks, 2, Logger(), relays);
  const Plan& p = relayed.plan_for(Collective::broadcast, 0);
  const std::vector<std::string> used = relay_gpus_of(p, t);
  ASSERT_FALSE(used.empty());
  // Ranks on devices 0 and 1, which reach each other; every relay on device 2, which no one reaches.
  const std::vector<std::vector<bool>> peer{{true, true, false}, {true, true, false}, {false, false, true}};
  std::map<std::string, int> device_of_relay;
  for (const std::string& r : relays) device_of_relay[r] = 2;
  EXPECT_NO_THROW(check_peer_access(p, ranks, {0, 1}, peer, {0, 1, 2}));  // the rank-to-rank edges alone
  try {
    check_peer_access(p, ranks, {0, 1}, peer, {0, 1, 2}, device_of_relay);
    ADD_FAILURE() << "a relay hop without peer access passed";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("(hop "));
    EXPECT_THAT(e.what(), HasSubstr("--gpus or the relays"));
  }
}

// What a one-GPU communicator with relays builds for the DGX-1 tenants of the GPU test (relays_gpu_test): each plan's
// relays on device 0 beside the ranks, the rings fitted to the cap at the small and the huge calls' blocks, then the
// grid fitted to an H200 (one launch), every relay GPU's rings within the cap in the schedule that runs.
TEST(RelayPlanning, OneGpuCommunicatorsKernelsFitTheCapAndTheGpu) {
  const std::int64_t cap = kDefaultRelayMemoryBytes;
  int relayed = 0, kernels = 0;
  for (const char* machine : {"dgx1-v100", "dgx1-p100"}) {
    const Topology t = load_topology(machine);
    for (const std::vector<std::string>& ranks : std::vector<std::vector<std::string>>{
             {"gpu0", "gpu1"}, {"gpu0", "gpu3"}, {"gpu0", "gpu1", "gpu2"}, {"gpu0", "gpu1", "gpu4", "gpu5"},
             {"gpu0", "gpu1", "gpu2", "gpu3", "gpu5"}}) {
      Placement p = place_ranks(t, described_gpus(1), ranks, true);
      std::vector<std::string> others;
      for (NodeId g : t.gpu_ids())
        if (std::find(ranks.begin(), ranks.end(), t.node(g).name) == ranks.end()) others.push_back(t.node(g).name);
      place_relays(t, others, {}, &p);
      PlanCache plans(t, p.rank_names, 1, Logger(), p.relay_names);
      for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                           Collective::reducescatter})
        for (int blocks : {8, 128}) {
          const Plan& plan = plans.plan_for(c, static_cast<int>(ranks.size()) - 1);
          CodegenOptions shape;
          shape.blocks_per_rank = blocks;
          shape.dtype = DataType::bf16;
          shape.device_of_rank = p.device_of_rank;
          const std::string what = fmt::format("{} {} {} blocks {}", machine, fmt::join(ranks, ","), to_string(c),
                                               blocks);
          CodegenOptions fitted;
          ASSERT_NO_THROW(fitted = fit_launch_shape(plan, with_relays(plan, t, p, cap, shape), {DeviceLimits{}}))
              << what;
          const Schedule s = lower(plan, fitted);
          ASSERT_EQ(s.devices.size(), 1u) << what;
          for (const auto& [gpu, bytes] : relay_memory(s)) EXPECT_LE(bytes, cap) << what << " " << gpu;
          // The rings' places in each relay GPU's area (RelayScratch): consecutive, 256-byte aligned, apart, and
          // the area they need within the cap.
          const std::vector<RelayRing> rings = relay_rings(s, p.relay_names);
          ASSERT_EQ(rings.size(), s.relays.size()) << what;
          std::vector<std::int64_t> end(p.relay_names.size(), 0);
          for (std::size_t k = 0; k < rings.size(); ++k) {
            EXPECT_EQ(p.relay_names[rings[k].relay], s.relays[k].gpu) << what;
            EXPECT_EQ(rings[k].offset % 256, 0) << what;
            EXPECT_GE(rings[k].offset, end[rings[k].relay]) << what << ": rings overlap";
            EXPECT_EQ(rings[k].bytes, s.resources[s.ranks + k].scratch_bytes) << what;
            end[rings[k].relay] = rings[k].offset + rings[k].bytes;
          }
          for (std::size_t g = 0; g < end.size(); ++g) {
            const std::vector<std::int64_t> need = relay_bytes_needed(rings, static_cast<int>(end.size()));
            EXPECT_EQ(need[g], end[g]) << what;
            EXPECT_LE(need[g], cap) << what << " " << p.relay_names[g];
          }
          for (const RelayParticipant& r : s.relays) EXPECT_EQ(r.device, 0) << what;
          relayed += s.relays.empty() ? 0 : 1;
          ++kernels;
        }
    }
  }
  EXPECT_EQ(kernels, 100);
  EXPECT_GE(relayed, 50) << "most of these tenants gain from relays";
  std::cout << "[ relays ] " << relayed << " of " << kernels << " kernels relayed\n";
}

}  // namespace
}  // namespace canopy
