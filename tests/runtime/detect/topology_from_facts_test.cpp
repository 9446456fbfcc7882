// topology_from_facts on fabricated machines: NVLink pairs and NVSwitch boxes reproduce the shipped topologies,
// PCIe-only and P2P-less boxes stay connected through PCIe and host nodes, every GPU gets a host link at its PCIe
// rate, and every assumption leaves a note.
#include "runtime/detect/topology_from_facts.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "topology/topo_writer.hpp"

namespace canopy {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string bus(int k) { return format_pci_bus_id(0, 0x10 + k, 0); }  // gpuK's bus id
std::string switch_bus(int s) { return format_pci_bus_id(0, 0xa0 + s, 0); }

GpuFacts gpu(int k, const std::string& name = "NVIDIA H200", int cc_major = 9, int cc_minor = 0) {
  GpuFacts g;
  g.cuda_ordinal = k;
  g.name = name;
  g.pci_bus_id = bus(k);
  g.cc_major = cc_major;
  g.cc_minor = cc_minor;
  g.memory_bytes = std::uint64_t{141} << 30;
  g.pcie_generation = 5;
  g.pcie_width = 16;
  return g;
}

void add_lanes(GpuFacts& g, int count, const std::string& remote, NvlinkRemoteKind kind, int version,
               unsigned nvml_version = 0) {
  for (int i = 0; i < count; ++i) {
    NvlinkLane lane;
    lane.link = static_cast<int>(g.nvlinks.size());
    lane.version = version;
    lane.nvml_version = nvml_version ? nvml_version : static_cast<unsigned>(version);
    lane.remote_bus_id = remote;
    lane.remote = kind;
    g.nvlinks.push_back(lane);
  }
}

// `count` lanes between gpus a and b, reported from both ends.
void join(std::vector<GpuFacts>& gpus, int a, int b, int count, int version) {
  add_lanes(gpus[a], count, bus(b), NvlinkRemoteKind::gpu, version);
  add_lanes(gpus[b], count, bus(a), NvlinkRemoteKind::gpu, version);
}

MachineFacts machine(std::vector<GpuFacts> gpus, bool p2p, const std::string& source = "nvml") {
  MachineFacts f;
  f.source = source;
  if (source != "nvml") f.nvml_unavailable = "libnvidia-ml.so.1 not found: no NVIDIA driver is installed";
  const std::size_t n = gpus.size();
  f.gpus = std::move(gpus);
  f.peers.assign(n, std::vector<PeerFacts>(n));
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b)
      if (a != b) f.peers[a][b] = {p2p, p2p, p2p ? 0 : -1};
  return f;
}

// Arcs by node names, with relays renamed by `rename`, so topologies that differ in switch names compare.
using NamedArc = std::tuple<std::string, std::string, std::string, double>;
std::set<NamedArc> named_arcs(const Topology& t, const std::map<std::string, std::string>& rename = {},
                              const std::string& kind_prefix = "") {
  auto name = [&](NodeId id) {
    const std::string& n = t.node(id).name;
    const auto it = rename.find(n);
    return it == rename.end() ? n : it->second;
  };
  std::set<NamedArc> arcs;
  for (const Arc& a : t.arcs())
    if (a.kind.rfind(kind_prefix, 0) == 0) arcs.insert({name(a.from), name(a.to), a.kind, a.gbps});
  return arcs;
}

// The `host` lines write_topo ends with when gpu0..gpu{n-1} all have PCIe gen5 x16 (as gpu() makes them).
std::string gen5_hosts(int n) {
  std::string text = "\n";
  for (int k = 0; k < n; ++k) text += "host gpu" + std::to_string(k) + " 63 pcie5\n";
  return text;
}

std::vector<HostLink> gen5_host_links(const Topology& t) {
  std::vector<HostLink> hosts;
  for (NodeId g : t.gpu_ids()) hosts.push_back({g, pcie5.gbps, pcie5.kind});
  return hosts;
}

std::string all_notes(const DetectedTopology& d) {
  std::string text;
  for (const std::string& n : d.notes) text += n + "\n";
  return text;
}

TEST(TopologyFromFacts, TwoH200On18Nvlink4LanesAreTheShippedH200x2) {
  std::vector<GpuFacts> gpus = {gpu(0), gpu(1)};
  join(gpus, 0, 1, 18, 4);
  const DetectedTopology d = topology_from_facts(machine(gpus, true), "h200x2");
  const Topology shipped = load_topology("h200x2");
  EXPECT_EQ(d.topology.nodes(), shipped.nodes());
  EXPECT_EQ(d.topology.arcs(), shipped.arcs()) << write_topo(d.topology);
  // Detected host links are nominal (gen5 x16); the shipped file's are measured there (55.2 GB/s).
  EXPECT_EQ(d.topology.host_links(), gen5_host_links(shipped));
  EXPECT_EQ(d.source, "nvml");
  EXPECT_EQ(d.gpu_names, (std::vector<std::string>{"NVIDIA H200", "NVIDIA H200"}));
  const std::string notes = all_notes(d);
  EXPECT_THAT(notes, HasSubstr("source nvml"));
  EXPECT_THAT(notes, HasSubstr("gpu0 = CUDA device 0: NVIDIA H200, sm_90, 141 GiB, PCI 0000:10:00.0, PCIe gen5 x16; "
                               "NVLink: 18 lanes to gpu1"));
  EXPECT_THAT(notes, HasSubstr("nvlink4 lanes count 26.5625 GB/s each way"));
  EXPECT_THAT(notes, Not(HasSubstr("warning")));
}

TEST(TopologyFromFacts, EightGpusOnFourNvswitchesAreTheShippedHgxH200) {
  std::vector<GpuFacts> gpus;
  for (int k = 0; k < 8; ++k) {
    gpus.push_back(gpu(k));
    const int lanes[4] = {5, 4, 4, 5};
    for (int s = 0; s < 4; ++s) add_lanes(gpus[k], lanes[s], switch_bus(s), NvlinkRemoteKind::nvswitch, 4);
  }
  const DetectedTopology d = topology_from_facts(machine(gpus, true), "hgx-h200");
  const Topology shipped = load_topology("hgx-h200");
  EXPECT_EQ(d.topology.nodes(), shipped.nodes());
  EXPECT_EQ(d.topology.arcs(), shipped.arcs()) << write_topo(d.topology);
  EXPECT_EQ(d.topology.host_links(), gen5_host_links(shipped)) << "the shipped file gives none";
  const std::string notes = all_notes(d);
  EXPECT_THAT(notes, HasSubstr("NVLink: 5 lanes to nvs0, 4 lanes to nvs1, 4 lanes to nvs2, 5 lanes to nvs3"));
  EXPECT_THAT(notes, HasSubstr("NVSwitches: nvs0 at 0000:a0:00.0, nvs1 at 0000:a1:00.0"));
}

TEST(TopologyFromFacts, AVmSliceOfAnHgxBoardReachesOneUnseenSwitch) {
  // As NVML (driver 580) reports two H200 of an HGX board passed to a VM: every lane goes to an NVSwitch whose
  // address reads FFFFFFFF:FF:FF.0, which gathering turns into an empty bus id.
  std::vector<GpuFacts> gpus = {gpu(0), gpu(1)};
  for (GpuFacts& g : gpus) add_lanes(g, 18, "", NvlinkRemoteKind::nvswitch, 4, 6);
  const DetectedTopology d = topology_from_facts(machine(gpus, true), "h200-vm");
  EXPECT_EQ(
      write_topo(d.topology),
      "topology h200-vm\ngpus 2\nswitch nvs0\n\nlink gpu0 nvs0 478.125 nvlink4\nlink gpu1 nvs0 478.125 nvlink4\n" +
          gen5_hosts(2));
  EXPECT_THAT(all_notes(d), HasSubstr("NVSwitches: nvs0 at an address NVML does not give"));
}

TEST(TopologyFromFacts, SwitchesAreNumberedInOrderOfFirstAppearance) {
  std::vector<GpuFacts> gpus = {gpu(0), gpu(1)};
  add_lanes(gpus[0], 2, switch_bus(7), NvlinkRemoteKind::nvswitch, 4);
  add_lanes(gpus[0], 1, switch_bus(3), NvlinkRemoteKind::nvswitch, 4);
  add_lanes(gpus[1], 1, switch_bus(3), NvlinkRemoteKind::nvswitch, 4);
  add_lanes(gpus[1], 2, switch_bus(7), NvlinkRemoteKind::nvswitch, 4);
  const Topology t = topology_from_facts(machine(gpus, true), "two-switches").topology;
  EXPECT_EQ(write_topo(t),
            "topology two-switches\ngpus 2\nswitch nvs0\nswitch nvs1\n\n"
            "link gpu0 nvs0 53.125 nvlink4\nlink gpu0 nvs1 26.5625 nvlink4\n"
            "link gpu1 nvs0 53.125 nvlink4\nlink gpu1 nvs1 26.5625 nvlink4\n" +
                gen5_hosts(2));
}

TEST(TopologyFromFacts, Dgx1HybridCubeMeshOfNvlink2LanesIsTheShippedNvlinkPart) {
  const Topology shipped = load_topology("dgx1-v100");
  std::vector<GpuFacts> gpus;
  for (int k = 0; k < 8; ++k) gpus.push_back(gpu(k, "Tesla V100-SXM2-32GB", 7, 0));
  for (const LinkView& l : paired_links(shipped))
    if (l.kind == "nvlink2") {
      ASSERT_TRUE(l.both_ways);
      join(gpus, l.a.index, l.b.index, static_cast<int>(l.gbps / nvlink2.gbps), 2);
    }
  MachineFacts f = machine(gpus, true);
  for (int a = 0; a < 8; ++a)  // no P2P across the two CPU sockets, as on a real DGX-1
    for (int b = 0; b < 8; ++b)
      if (a != b && a / 4 != b / 4) f.peers[a][b] = {false, false, -1};
  const DetectedTopology d = topology_from_facts(f, "dgx1-v100");
  EXPECT_EQ(named_arcs(d.topology), named_arcs(shipped, {}, "nvlink")) << write_topo(d.topology);
  EXPECT_EQ(d.topology.nodes().size(), 8u) << "NVLink joins every GPU: no PCIe node is needed";
  EXPECT_THAT(all_notes(d), HasSubstr("gpu0 = CUDA device 0: Tesla V100-SXM2-32GB, sm_70"));
  EXPECT_THAT(all_notes(d), HasSubstr("nvlink2 lanes count 25 GB/s each way"));
}

TEST(TopologyFromFacts, PcieOnlyBoxWithP2PSharesOnePcieSwitch) {
  std::vector<GpuFacts> gpus;
  for (int k = 0; k < 4; ++k) {
    gpus.push_back(gpu(k, "NVIDIA L40S", 8, 9));
    gpus[k].pcie_generation = 4;
  }
  const DetectedTopology d = topology_from_facts(machine(gpus, true), "pcie-4gpu");
  EXPECT_EQ(named_arcs(d.topology), named_arcs(load_topology("pcie-4gpu"), {{"plx0", "pcie0"}}))
      << write_topo(d.topology);
  EXPECT_FALSE(d.topology.find("host0")) << "one P2P group needs no host node";
  EXPECT_THAT(all_notes(d), AllOf(HasSubstr("NVLink does not join every GPU"), HasSubstr("pcieK"),
                                  Not(HasSubstr("warning"))));
}

TEST(TopologyFromFacts, PcieWidthScalesTheSlotFigure) {
  std::vector<GpuFacts> gpus = {gpu(0), gpu(1)};
  gpus[0].pcie_generation = 3;
  gpus[0].pcie_width = 8;
  const Topology t = topology_from_facts(machine(gpus, true), "x8").topology;
  EXPECT_THAT(write_topo(t), AllOf(HasSubstr("link gpu0 pcie0 7.875 pcie3"), HasSubstr("link gpu1 pcie0 63 pcie5"),
                                   HasSubstr("host gpu0 7.875 pcie3\nhost gpu1 63 pcie5\n")));
}

TEST(TopologyFromFacts, EveryGpuGetsAHostLinkAtItsNominalPcieRate) {
  // gen3 x16, gen4 x8, gen5 x16, gen5 x4, then width unknown and generation unknown; all on one NVSwitch.
  const int generation[] = {3, 4, 5, 5, 4, 0};
  const int width[] = {16, 8, 16, 4, 0, 16};
  std::vector<GpuFacts> gpus;
  for (int k = 0; k < 6; ++k) {
    gpus.push_back(gpu(k));
    gpus[k].pcie_generation = generation[k];
    gpus[k].pcie_width = width[k];
    add_lanes(gpus[k], 18, switch_bus(0), NvlinkRemoteKind::nvswitch, 4);
  }
  const DetectedTopology d = topology_from_facts(machine(gpus, true), "hosts");
  const auto g = d.topology.gpu_ids();
  EXPECT_EQ(d.topology.host_links(),
            (std::vector<HostLink>{
                {g[0], 15.75, "pcie3"}, {g[1], 15.75, "pcie4"}, {g[2], 63, "pcie5"}, {g[3], 15.75, "pcie5"}}));
  EXPECT_THAT(write_topo(d.topology), HasSubstr("\nhost gpu0 15.75 pcie3\nhost gpu1 15.75 pcie4\nhost gpu2 63 pcie5\n"
                                                "host gpu3 15.75 pcie5\n"));
  EXPECT_EQ(named_arcs(d.topology, {}, "pcie"), std::set<NamedArc>{}) << "host links are no arcs";
  EXPECT_THAT(all_notes(d), AllOf(HasSubstr("host links: each GPU's PCIe rate (x16 = 15.75 / 31.5 / 63 GB/s for "
                                            "gen3 / 4 / 5, scaled by width/16)"),
                                  HasSubstr("PCIe generation or width unknown for gpu4, gpu5: no host link "
                                            "(`canopy detect --measure` measures one)")));
}

TEST(TopologyFromFacts, GpusWithoutNvlinkOrP2PAreJoinedThroughTheHostWithAWarning) {
  const DetectedTopology d = topology_from_facts(machine({gpu(0), gpu(1)}, false), "apart");
  EXPECT_EQ(
      write_topo(d.topology),
      "topology apart\ngpus 2\nswitch host0\n\nlink gpu0 host0 63 pcie5\nlink gpu1 host0 63 pcie5\n" + gen5_hosts(2));
  EXPECT_THAT(all_notes(d), AllOf(HasSubstr("warning: no NVLink path and no P2P access between gpu0-gpu1"),
                                  HasSubstr("joined through host0 only so the topology is connected")));
}

TEST(TopologyFromFacts, TwoP2PGroupsGetASwitchEachUnderTheHost) {
  std::vector<GpuFacts> gpus = {gpu(0), gpu(1), gpu(2), gpu(3), gpu(4)};
  join(gpus, 0, 1, 4, 4);  // two NVLink bridges, no NVLink between them
  join(gpus, 2, 3, 4, 4);
  MachineFacts f = machine(gpus, false);
  for (auto [a, b] : {std::pair{0, 1}, {2, 3}})
    f.peers[a][b] = f.peers[b][a] = {true, true, 0};
  const DetectedTopology d = topology_from_facts(f, "islands");
  EXPECT_EQ(write_topo(d.topology),
            "topology islands\ngpus 5\nswitch pcie0\nswitch pcie1\nswitch host0\n\n"
            "link gpu0 gpu1 106.25 nvlink4\nlink gpu0 pcie0 63 pcie5\nlink gpu1 pcie0 63 pcie5\n"
            "link gpu2 gpu3 106.25 nvlink4\nlink gpu2 pcie1 63 pcie5\nlink gpu3 pcie1 63 pcie5\n"
            "link gpu4 host0 63 pcie5\nlink pcie0 host0 63 pcie5\nlink pcie1 host0 63 pcie5\n" +
                gen5_hosts(5));
  EXPECT_THAT(all_notes(d), HasSubstr("between gpu0-gpu2, gpu0-gpu3, gpu0-gpu4, gpu1-gpu2"));
}

TEST(TopologyFromFacts, UnknownNvlinkVersionCountsAsNvlink4WithANote) {
  std::vector<GpuFacts> gpus = {gpu(0, "Future GPU", 12, 0), gpu(1, "Future GPU", 12, 0)};
  add_lanes(gpus[0], 4, bus(1), NvlinkRemoteKind::gpu, 0, 9);
  add_lanes(gpus[1], 4, bus(0), NvlinkRemoteKind::gpu, 0, 9);
  const DetectedTopology d = topology_from_facts(machine(gpus, true), "future");
  EXPECT_EQ(write_topo(d.topology), "topology future\ngpus 2\n\nlink gpu0 gpu1 106.25 nvlink4\n" + gen5_hosts(2));
  EXPECT_THAT(all_notes(d), HasSubstr("gpu0 <-> gpu1: NVLink version unknown (NVML reported 9, sm_120): assumed "
                                      "nvlink4, 26.5625 GB/s per lane each way"));
}

TEST(TopologyFromFacts, Nvlink5AndGa10xBridgeLanes) {
  EXPECT_EQ(nvlink_lane_type(5, 10, 0)->gbps, 53.125);
  EXPECT_EQ(std::string(nvlink_lane_type(5, 10, 0)->kind), "nvlink5");
  EXPECT_EQ(nvlink_lane_type(3, 8, 0)->gbps, nvlink3.gbps);
  EXPECT_EQ(nvlink_lane_type(3, 8, 6)->gbps, 14.0625);
  EXPECT_FALSE(nvlink_lane_type(0, 9, 0));
  EXPECT_FALSE(nvlink_lane_type(6, 9, 0));
  EXPECT_EQ(pcie_bandwidth(4, 0)->gbps, 31.5);
  EXPECT_EQ(pcie_bandwidth(5, 4)->gbps, 15.75);
  EXPECT_FALSE(pcie_bandwidth(0, 16));
}

TEST(TopologyFromFacts, CudaOnlyFactsAssumePcie4AndSaySo) {
  std::vector<GpuFacts> gpus = {gpu(0), gpu(1), gpu(2)};
  for (GpuFacts& g : gpus) g.pcie_generation = g.pcie_width = 0;
  const DetectedTopology d = topology_from_facts(machine(gpus, true, "cuda"), "cuda-only");
  EXPECT_EQ(d.source, "cuda");
  EXPECT_EQ(write_topo(d.topology), "topology cuda-only\ngpus 3\nswitch pcie0\n\nlink gpu0 pcie0 31.5 pcie4\n"
                                    "link gpu1 pcie0 31.5 pcie4\nlink gpu2 pcie0 31.5 pcie4\n");
  EXPECT_THAT(all_notes(d), AllOf(HasSubstr("source cuda: NVML unavailable (libnvidia-ml.so.1 not found"),
                                  HasSubstr("NVLink unknown without NVML"),
                                  HasSubstr("PCIe generation unknown for gpu0, gpu1, gpu2: assumed gen4 x16"),
                                  HasSubstr("PCIe generation or width unknown for gpu0, gpu1, gpu2: no host link")));
  EXPECT_TRUE(d.topology.host_links().empty()) << "the assumed PCIe joins GPUs; it gives no host link";
}

TEST(TopologyFromFacts, LanesToOtherGpusCpusAndUnknownEndsAreLeftOutWithNotes) {
  std::vector<GpuFacts> gpus = {gpu(0), gpu(1)};
  join(gpus, 0, 1, 2, 4);
  add_lanes(gpus[0], 3, bus(5), NvlinkRemoteKind::gpu, 4);  // a GPU this process does not use
  add_lanes(gpus[1], 1, "", NvlinkRemoteKind::cpu, 4);
  add_lanes(gpus[1], 1, "", NvlinkRemoteKind::unknown, 4);
  const DetectedTopology d = topology_from_facts(machine(gpus, true), "partial");
  EXPECT_EQ(write_topo(d.topology), "topology partial\ngpus 2\n\nlink gpu0 gpu1 53.125 nvlink4\n" + gen5_hosts(2));
  EXPECT_THAT(all_notes(d),
              AllOf(HasSubstr("gpu0: 3 lanes to 0000:15:00.0, which is not among the detected GPUs, left out"),
                    HasSubstr("gpu1: 1 lane to a CPU left out"), HasSubstr("gpu1: 1 lane whose far end NVML could not name")));
}

TEST(TopologyFromFacts, OneSidedOrLopsidedLaneCountsUseTheLargerWithANote) {
  std::vector<GpuFacts> gpus = {gpu(0), gpu(1)};
  add_lanes(gpus[0], 4, bus(1), NvlinkRemoteKind::gpu, 4);
  add_lanes(gpus[1], 3, bus(0), NvlinkRemoteKind::gpu, 4);
  const DetectedTopology d = topology_from_facts(machine(gpus, true), "lopsided");
  EXPECT_EQ(write_topo(d.topology), "topology lopsided\ngpus 2\n\nlink gpu0 gpu1 106.25 nvlink4\n" + gen5_hosts(2));
  EXPECT_THAT(all_notes(d), HasSubstr("gpu0 sees 4 lanes and gpu1 sees 3 lanes; the larger count is used"));
}

TEST(TopologyFromFacts, NvlinkWithoutP2PIsKeptWithAWarning) {
  std::vector<GpuFacts> gpus = {gpu(0), gpu(1)};
  join(gpus, 0, 1, 18, 4);
  const DetectedTopology d = topology_from_facts(machine(gpus, false), "no-p2p");
  EXPECT_EQ(d.topology.arcs().size(), 2u);
  EXPECT_THAT(all_notes(d), HasSubstr("warning: NVLink joins gpu0-gpu1 but the CUDA runtime grants no P2P access"));
}

TEST(TopologyFromFacts, OneGpuIsAValidTopology) {
  const DetectedTopology d = topology_from_facts(machine({gpu(0)}, false), "single");
  EXPECT_EQ(write_topo(d.topology), "topology single\ngpus 1\n" + gen5_hosts(1));
}

TEST(TopologyFromFacts, MalformedFactsAndNamesAreErrors) {
  EXPECT_THROW(topology_from_facts(MachineFacts{}, "empty"), Error);
  MachineFacts f = machine({gpu(0), gpu(1)}, true);
  f.peers.pop_back();
  EXPECT_THROW(topology_from_facts(f, "ragged"), Error);
  EXPECT_THROW(topology_from_facts(machine({gpu(0)}, true), "9lives"), Error);
}

}  // namespace
}  // namespace canopy
