// place_ranks: ranks from the topology (all GPUs or a --gpus list), devices cut to the ranks, virtual ranks in blocks,
// and what the placement allows (peer access, NVLink hops), on any CPU with GPUs described by hand.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "codegen/codegen_options.hpp"
#include "core/error.hpp"
#include "topology/topo_reader.hpp"
#include "runtime/comm/placement.hpp"
#include "tests/runtime/comm/described_gpus.hpp"

namespace canopy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing::described_gpus;

const Topology& four_gpus() {
  static const Topology t = read_topo(
      "topology four\ngpus 4\nswitch nvs0\nlink gpu0 nvs0 100 nvlink4\nlink gpu1 nvs0 100 nvlink4\n"
      "link gpu2 nvs0 100 nvlink4\nswitch pcie0\nlink gpu3 pcie0 32 pcie5\nlink gpu0 pcie0 32 pcie5\n",
      "four.topo");
  return t;
}

TEST(Placement, EveryGpuOfTheTopologyIsARankAndDevicesAreCutToTheRanks) {
  const Placement p = place_ranks(four_gpus(), described_gpus(8), {}, /*devices_given=*/false);
  EXPECT_THAT(p.rank_names, ElementsAre("gpu0", "gpu1", "gpu2", "gpu3"));
  EXPECT_EQ(p.devices(), 4);
  EXPECT_THAT(p.device_of_rank, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(p.first_rank, ElementsAre(0, 1, 2, 3));
}

TEST(Placement, MoreRanksThanDevicesRunAsVirtualRanksInBlocks) {
  const Placement p = place_ranks(four_gpus(), described_gpus(2), {}, true);
  EXPECT_THAT(p.device_of_rank, ElementsAre(0, 0, 1, 1));
  EXPECT_THAT(p.ordinal_of_rank, ElementsAre(0, 0, 1, 1));
  EXPECT_THAT(p.first_rank, ElementsAre(0, 2));
  EXPECT_THAT(describe_placement(p), HasSubstr("GPU 0 (test GPU, sm_90): gpu0 gpu1; GPU 1"));
}

// Found on four H200 (2026-11-27): six ranks in blocks of three rounded-up twos left GPU 3 with none, its first rank
// -1, while the kernels launched on three devices and the runtime read a fourth launch past the end.
TEST(Placement, UnevenVirtualRanksGiveEveryDeviceSome) {
  const Topology six = read_topo("topology six\ngpus 6\nswitch nvs0\nlink gpu0 nvs0 100 nvlink4\nlink gpu1 nvs0 100 nvlink4\n"
                                 "link gpu2 nvs0 100 nvlink4\nlink gpu3 nvs0 100 nvlink4\nlink gpu4 nvs0 100 nvlink4\n"
                                 "link gpu5 nvs0 100 nvlink4\n",
                                 "six.topo");
  const Placement p = place_ranks(six, described_gpus(4), {}, true);
  EXPECT_THAT(p.device_of_rank, ElementsAre(0, 0, 1, 1, 2, 3));
  EXPECT_THAT(p.first_rank, ElementsAre(0, 2, 4, 5));
  EXPECT_THAT(block_placement(5, 4), ElementsAre(0, 0, 1, 2, 3));
  EXPECT_THAT(block_placement(10, 4), ElementsAre(0, 0, 0, 1, 1, 1, 2, 2, 3, 3));
  EXPECT_THAT(block_placement(9, 3), ElementsAre(0, 0, 0, 1, 1, 1, 2, 2, 2));
  EXPECT_THAT(block_placement(2, 4), ElementsAre(0, 1));
  for (int ranks = 1; ranks <= 24; ++ranks)
    for (int devices = 1; devices <= ranks; ++devices) {
      std::vector<int> held(devices, 0);
      for (int d : block_placement(ranks, devices)) ++held[d];
      for (int d = 0; d < devices; ++d)
        EXPECT_TRUE(held[d] == ranks / devices || held[d] == ranks / devices + 1)
            << ranks << " ranks on " << devices << " devices: device " << d << " holds " << held[d];
    }
}

// Processes sharing one GPU each hold a device index of the same UUID: the host path across processes counts GPUs.
TEST(Placement, DistinctGpusCountsEachUuidOnce) {
  Placement p = place_ranks(four_gpus(), described_gpus(4), {}, false);
  EXPECT_EQ(distinct_gpus(p), 4);
  p.gpus[2].uuid = p.gpus[1].uuid = p.gpus[0].uuid;
  EXPECT_EQ(distinct_gpus(p), 2);
  p.gpus[3].uuid = p.gpus[0].uuid;
  EXPECT_EQ(distinct_gpus(p), 1);
}

TEST(Placement, AGpuListChoosesTheRanksInItsOrder) {
  const Placement p = place_ranks(four_gpus(), described_gpus(2), {"gpu2", "gpu0"}, false);
  EXPECT_THAT(p.rank_names, ElementsAre("gpu2", "gpu0"));
}

TEST(Placement, MoreDevicesGivenThanRanksIsAnError) {
  try {
    place_ranks(four_gpus(), described_gpus(3), {"gpu0", "gpu1"}, true);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("3 devices given for 2 ranks of topology four: give at most as many devices"));
  }
}

TEST(Placement, PeerAccessAndNVLinkHopsSayWhichPairLacksThem) {
  Placement p = place_ranks(four_gpus(), described_gpus(4), {}, false);
  EXPECT_EQ(missing_peer_access(p), "GPUs 0 and 1 have no peer access");  // the transport has not filled it
  for (auto& row : p.peer) row.assign(row.size(), true);
  EXPECT_EQ(missing_peer_access(p), "");
  EXPECT_THAT(nvlink_hop_missing(p, four_gpus()), HasSubstr("gpu0 and gpu3 are not one NVLink hop apart"));
  const Placement three = [&] {
    Placement q = place_ranks(four_gpus(), described_gpus(3), {"gpu0", "gpu1", "gpu2"}, false);
    for (auto& row : q.peer) row.assign(row.size(), true);
    return q;
  }();
  EXPECT_EQ(nvlink_hop_missing(three, four_gpus()), "");
}

}  // namespace
}  // namespace canopy
