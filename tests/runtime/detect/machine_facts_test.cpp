// MachineFacts' helpers: PCI bus ids from NVML and CUDA compare equal once normalized, the NVLink generation comes
// from the architecture before NVML's ambiguous version codes, and P2P needs both directions.
#include "runtime/detect/machine_facts.hpp"

#include <gtest/gtest.h>

namespace canopy {
namespace {

TEST(MachineFacts, PciBusIdsFromNvmlAndCudaNormalizeAlike) {
  EXPECT_EQ(normalize_pci_bus_id("00000000:18:00.0"), "0000:18:00.0");  // NVML
  EXPECT_EQ(normalize_pci_bus_id("0000:18:00.0"), "0000:18:00.0");      // CUDA
  EXPECT_EQ(normalize_pci_bus_id("0000:B7:00.0"), "0000:b7:00.0");
  EXPECT_EQ(normalize_pci_bus_id("18:00.0"), "0000:18:00.0");
  EXPECT_EQ(normalize_pci_bus_id("10000:01:00.1"), "10000:01:00.1");  // VMD domains are wider than 4 digits
  for (const char* bad : {"", "0000:18:00", "x:18:00.0", "0:0:0:0.0", "0000:18:00.", ":18:00.0", "00000000018:0.0"})
    EXPECT_EQ(normalize_pci_bus_id(bad), "") << bad;
  EXPECT_EQ(format_pci_bus_id(0, 0x18, 0), "0000:18:00.0");
}

TEST(MachineFacts, NvlinkGenerationFollowsTheArchitectureFirst) {
  EXPECT_EQ(nvlink_generation(1, 6), 1);
  EXPECT_EQ(nvlink_generation(2, 7), 2);
  EXPECT_EQ(nvlink_generation(4, 8), 3);  // nvmlNvlinkVersion_t 3_0 on an A100
  EXPECT_EQ(nvlink_generation(3, 8), 3);  // or the major version
  EXPECT_EQ(nvlink_generation(6, 9), 4);
  EXPECT_EQ(nvlink_generation(4, 9), 4);
  EXPECT_EQ(nvlink_generation(0, 9), 4);  // version not reported
  EXPECT_EQ(nvlink_generation(7, 10), 5);
  EXPECT_EQ(nvlink_generation(2, 12), 2);  // an architecture Canopy does not know: only 1 and 2 are unambiguous
  EXPECT_EQ(nvlink_generation(4, 12), 0);
  EXPECT_EQ(nvlink_generation(0, 0), 0);
}

TEST(MachineFacts, P2PNeedsBothDirections) {
  MachineFacts f;
  f.peers.assign(3, std::vector<PeerFacts>(3));
  f.peers[0][1].can_access = f.peers[1][0].can_access = true;
  f.peers[0][2].can_access = true;
  EXPECT_TRUE(f.p2p(0, 1));
  EXPECT_TRUE(f.p2p(1, 0));
  EXPECT_FALSE(f.p2p(0, 2));
  EXPECT_FALSE(f.p2p(0, 0));
  EXPECT_FALSE(f.p2p(0, 3));
  EXPECT_EQ(to_string(NvlinkRemoteKind::nvswitch), "switch");
}

}  // namespace
}  // namespace canopy
