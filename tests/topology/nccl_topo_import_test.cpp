// NCCL topology XML -> Topology on real files others wrote (tests/data/nccl-topo/README.md): Azure's HPC image files
// (partial: PCIe only), IBM Cloud's H100 NCCL_TOPO_FILE (a full dump: NVSwitch, NICs and ports) and the dump NCCL
// 2.28 wrote on the device machine (one H100). Each must give NCCL's GPUs, switches and rates, read back through .topo, and
// plan: the planner's optimum for broadcast and allreduce is finite and positive. Malformed files (real files with
// one thing broken) are errors naming FILE:LINE and the fix.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "topology/nccl_topo_import.hpp"
#include "topology/topo_reader.hpp"
#include "planner/plan_eval.hpp"
#include "planner/planner.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

std::filesystem::path data(const std::string& file) { return testing::source_dir() / "tests/data/nccl-topo" / file; }

NcclImport import_file(const std::string& file, const NcclImportOptions& options = {}) {
  return import_nccl_topology(testing::read_file(data(file)), file, options);
}

// The capacity from a to b summed over kinds (0 when there is no arc), and whether every arc between them has `kind`.
double gbps(const Topology& t, const std::string& a, const std::string& b, const std::string& kind = "") {
  double sum = 0;
  for (const Arc& arc : t.arcs())
    if (t.node(arc.from).name == a && t.node(arc.to).name == b && (kind.empty() || arc.kind == kind)) sum += arc.gbps;
  return sum;
}

int switches(const Topology& t, const std::string& prefix) {
  int n = 0;
  for (const Node& node : t.nodes())
    if (node.kind == NodeKind::relay && node.name.rfind(prefix, 0) == 0) ++n;
  return n;
}

bool has_note(const NcclImport& r, const std::string& text) {
  for (const std::string& n : r.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

// The planner's optimum for broadcast and allreduce on every GPU is finite and positive, and the plans are valid.
void expect_plannable(const Topology& t) {
  for (Collective c : {Collective::broadcast, Collective::allreduce, Collective::allgather}) {
    const Plan p = plan(t, c);
    EXPECT_TRUE(std::isfinite(p.bound_algbw_gbps)) << to_string(c);
    EXPECT_GT(p.bound_algbw_gbps, 0) << to_string(c);
    EXPECT_GT(p.algbw_gbps, 0.99 * p.bound_algbw_gbps) << to_string(c);
    EXPECT_TRUE(check_plan(t, p).empty()) << to_string(c);
  }
}

// The .topo text (with its comment header) reads back to the same topology.
void expect_round_trip(const NcclImport& r, const std::string& origin) {
  EXPECT_EQ(read_topo(nccl_import_text(r, origin), origin + ".topo"), r.topology);
}

TEST(NcclTopoImport, AzureNdv4PartialFileGivesPcieTreeAndNics) {
  const NcclImport r = import_file("azure-ndv4-topo.xml");
  const Topology& t = r.topology;
  EXPECT_EQ(t.gpu_count(), 8);
  EXPECT_EQ(switches(t, "cpu"), 4);
  EXPECT_EQ(switches(t, "pci"), 4);
  EXPECT_EQ(switches(t, "nic"), 8);
  EXPECT_EQ(switches(t, "nvs"), 0);
  // No <gpu>: gpu0.. in bus id order; 0001 and 0002 sit under the second switch (ffff:ff:02.0, pci1).
  EXPECT_THAT(r.legend[0], HasSubstr("gpu0 = GPU 0001:00:00.0"));
  EXPECT_THAT(r.legend[6], HasSubstr("gpu6 = GPU 000d:00:00.0"));
  EXPECT_DOUBLE_EQ(gbps(t, "gpu0", "pci1", "pcie4"), 24);  // x16 at 16 GT/s: 16 x 120 / 80
  EXPECT_DOUBLE_EQ(gbps(t, "pci1", "cpu1", "pcie4"), 24);
  EXPECT_DOUBLE_EQ(gbps(t, "pci0", "nic0", "pcie4"), 24);
  EXPECT_DOUBLE_EQ(gbps(t, "cpu0", "cpu3", "xgmi"), 16);  // AMD_BW, every pair of the 4 NUMA nodes
  EXPECT_DOUBLE_EQ(gbps(t, "cpu3", "cpu1", "xgmi"), 16);
  EXPECT_DOUBLE_EQ(*t.host_gbps(*t.find("gpu5")), 24);
  EXPECT_EQ(r.partial_gpus, 8);
  EXPECT_TRUE(has_note(r, "not in the file and was not detected"));
  expect_round_trip(r, "azure-ndv4-topo.xml");
  expect_plannable(t);
}

TEST(NcclTopoImport, AzureNdv5SapphireRapidsSocketsAndGen5) {
  const NcclImport r = import_file("azure-ndv5-topo.xml");
  const Topology& t = r.topology;
  EXPECT_EQ(t.gpu_count(), 8);
  EXPECT_EQ(switches(t, "pci"), 8);
  EXPECT_EQ(switches(t, "nic"), 8);
  EXPECT_DOUBLE_EQ(gbps(t, "gpu3", "pci3", "pcie5"), 48);  // 0008:00:00.0 under ffff:ff:04.0; gen5 x16 = 48
  EXPECT_DOUBLE_EQ(gbps(t, "cpu0", "cpu1", "qpi"), 22);    // family 6 model 143 (0x8F): SRP_QPI_BW
  EXPECT_DOUBLE_EQ(gbps(t, "cpu1", "cpu0", "qpi"), 22);
  expect_round_trip(r, "azure-ndv5-topo.xml");
  expect_plannable(t);
}

TEST(NcclTopoImport, AzureNdv2TakesNvlinkFromDetectionMatchedByBusId) {
  NcclImport r = import_file("azure-ndv2-topo.xml");
  EXPECT_EQ(r.topology.gpu_count(), 8);
  EXPECT_DOUBLE_EQ(gbps(r.topology, "cpu0", "cpu1", "qpi"), 10);  // model 85 (0x55): SKL_QPI_BW
  EXPECT_DOUBLE_EQ(gbps(r.topology, "gpu0", "gpu1"), 0);           // the file has no NVLink
  expect_plannable(r.topology);

  // What detection on an ND40rs v2 reports (NVML's bus ids, 8-digit domain): V100 lanes between GPUs.
  NcclImportOptions options;
  options.detected = std::vector<NcclDetectedGpu>{
      {"00000001:00:00.0", 70, {{"00000002:00:00.0", 2, "0x030200"}, {"00000005:00:00.0", 1, "0x030200"}}},
      {"00000002:00:00.0", 70, {{"00000001:00:00.0", 2, "0x030200"}}},
      {"00000005:00:00.0", 70, {{"00000001:00:00.0", 1, "0x030200"}}}};
  r = import_file("azure-ndv2-topo.xml", options);
  EXPECT_EQ(r.detected_gpus, 3);
  EXPECT_DOUBLE_EQ(gbps(r.topology, "gpu0", "gpu1", "nvlink2"), 40);  // 2 lanes x SM70_NVLINK_BW 20
  EXPECT_DOUBLE_EQ(gbps(r.topology, "gpu1", "gpu0", "nvlink2"), 40);
  EXPECT_DOUBLE_EQ(gbps(r.topology, "gpu4", "gpu0", "nvlink2"), 20);
  EXPECT_TRUE(has_note(r, "detected on this machine"));
  EXPECT_TRUE(has_note(r, "5 GPUs without a <gpu> element matched no GPU detected"));
  expect_round_trip(r, "azure-ndv2-topo.xml");

  // Another machine's GPUs match none: no NVLink, and a note saying so.
  options.detected = std::vector<NcclDetectedGpu>{{"0000:18:00.0", 90, {{"", 18, "0x068000"}}}};
  r = import_file("azure-ndv2-topo.xml", options);
  EXPECT_EQ(r.detected_gpus, 0);
  EXPECT_EQ(switches(r.topology, "nvs"), 0);
  EXPECT_TRUE(has_note(r, "8 GPUs without a <gpu> element matched no GPU detected"));
}

TEST(NcclTopoImport, AzureNcv4GpusNvlinkToItselfAndNicOnCpu) {
  const NcclImport r = import_file("azure-ncv4-topo.xml");
  const Topology& t = r.topology;
  EXPECT_EQ(t.gpu_count(), 4);
  EXPECT_EQ(r.partial_gpus, 0);
  EXPECT_THAT(r.legend[2], HasSubstr("gpu2 = GPU 0003:00:00.0 (line 20), NCCL rank 2, dev 2, sm 80"));
  // link_width="0" counts as 16 and link_speed="" as 8 GT/s, as NCCL reads them: 16 x 60 / 80 = 12.
  EXPECT_DOUBLE_EQ(gbps(t, "gpu0", "cpu0", "pcie3"), 12);
  EXPECT_TRUE(has_note(r, "link_speed \"\""));
  // Each GPU's <nvlink> names the GPU itself: left out, with a note.
  EXPECT_TRUE(has_note(r, "NVLink of GPU 0001:00:00.0 to itself"));
  for (const Arc& a : t.arcs()) EXPECT_FALSE(is_nvlink(a));
  // <cpu><nic><net speed="100000"> (Mb/s): a NIC on cpu0 at LOC_BW, its port at 100000 / 8000 = 12.5 GB/s.
  EXPECT_DOUBLE_EQ(gbps(t, "cpu0", "nic0", "loc"), 5000);
  EXPECT_DOUBLE_EQ(gbps(t, "nic0", "net0", "net"), 12.5);
  EXPECT_DOUBLE_EQ(gbps(t, "cpu2", "cpu1", "xgmi"), 16);
  expect_round_trip(r, "azure-ncv4-topo.xml");
  expect_plannable(t);
}

TEST(NcclTopoImport, IbmH100DumpJoinsEveryNvswitchTargetInOneSwitch) {
  const NcclImport r = import_file("ibm-gx3d-h100-topo.xml");
  const Topology& t = r.topology;
  EXPECT_EQ(t.gpu_count(), 8);
  EXPECT_EQ(switches(t, "nvs"), 1);  // four NVSwitch bus ids (f3..f6), one node, as NCCL
  EXPECT_EQ(switches(t, "net"), 8);
  EXPECT_EQ(switches(t, "nic"), 8);
  EXPECT_EQ(switches(t, "pci"), 8);
  for (int g = 0; g < 8; ++g) {
    const std::string gpu = "gpu" + std::to_string(g);
    EXPECT_DOUBLE_EQ(gbps(t, gpu, "nvs0", "nvlink4"), 370.8) << gpu;  // 5 + 5 + 4 + 4 lanes x SM90_NVLINK_BW 20.6
    EXPECT_DOUBLE_EQ(gbps(t, "nvs0", gpu, "nvlink4"), 370.8) << gpu;
    EXPECT_THAT(r.legend[g], HasSubstr(gpu + " = GPU")) << "rank order";
    EXPECT_THAT(r.legend[g], HasSubstr("NCCL rank " + std::to_string(g)));
  }
  // <net dev="7" speed="200000"> under the NIC of the first switch: 25 GB/s; the switches' uplinks are 2.5 GT/s x1.
  EXPECT_DOUBLE_EQ(gbps(t, "nic0", "net7", "net"), 25);
  EXPECT_DOUBLE_EQ(gbps(t, "pci0", "cpu0", "pcie1"), 0.1875);
  EXPECT_DOUBLE_EQ(gbps(t, "gpu0", "pci0", "pcie5"), 48);
  expect_round_trip(r, "ibm-gx3d-h100-topo.xml");
  expect_plannable(t);
  // Broadcast from gpu0 is held by its NVLink (370.8) plus at most what leaves through PCIe to the CPU (0.1875).
  const Plan p = plan(t, Collective::broadcast);
  EXPECT_GE(p.bound_algbw_gbps, 370.8 - 1e-6);
  EXPECT_LE(p.bound_algbw_gbps, 370.8 + 0.1875 + 1e-6);
}

// NCCL 2.28 on the device machine's one H100/H200, written with NCCL_TOPO_DUMP_FILE: one GPU (sm 90, PCIe gen5 with
// link_width 0) on a <cpu numaid="-1"> (a VM), and the socket NIC eth0 (10000 Mb/s) as a <nic> of the <cpu>.
TEST(NcclTopoImport, DeviceMachineDumpOfOneH100) {
  const NcclImport r = import_file("device-h200-nccl-topo-dump.xml");
  const Topology& t = r.topology;
  EXPECT_EQ(t.gpu_count(), 1);
  EXPECT_EQ(r.partial_gpus, 0);
  EXPECT_THAT(r.legend[0], HasSubstr("gpu0 = GPU 0000:00:06.0 (line 3), NCCL rank 0, dev 0, sm 90, PCIe gen5 x16"));
  EXPECT_THAT(r.legend[1], HasSubstr("cpu0 = <cpu numaid=\"-1\"> (line 2): x86_64 GenuineIntel family 6 model 207"));
  EXPECT_DOUBLE_EQ(gbps(t, "gpu0", "cpu0", "pcie5"), 48);  // link_width="0" counts as 16: 16 x 240 / 80
  EXPECT_DOUBLE_EQ(*t.host_gbps(*t.find("gpu0")), 48);
  EXPECT_DOUBLE_EQ(gbps(t, "cpu0", "nic0", "loc"), 5000);
  EXPECT_DOUBLE_EQ(gbps(t, "nic0", "net0", "net"), 1.25);  // speed="10000" Mb/s
  EXPECT_EQ(switches(t, "nvs"), 0);                         // one GPU: NCCL lists no <nvlink>
  expect_round_trip(r, "device-h200-nccl-topo-dump.xml");
  // One GPU is a local copy, not a plan: the planner says so rather than failing on the imported topology.
  try {
    (void)plan(t, Collective::allreduce);
    ADD_FAILURE() << "planned one GPU";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("planning needs at least 2 GPUs, got 1"));
  }
}

// ---- errors: real files with one thing broken -------------------------------------------------------------

std::string broken(const std::string& file, const std::string& from, const std::string& to) {
  std::string text = testing::read_file(data(file));
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string error_of(const std::string& text) {
  try {
    (void)import_nccl_topology(text, "nccl.xml");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(NcclTopoImportErrors, NameTheLineAndTheFix) {
  EXPECT_EQ(error_of(broken("azure-ndv4-topo.xml", "</pci>\n  </cpu>", "</cpu>")),
            "nccl.xml:8: error: </cpu> closes <pci> (line 3)");
  EXPECT_EQ(error_of(broken("azure-ndv4-topo.xml", " link_width=\"16\">", ">")),
            "nccl.xml:3: error: <pci> lacks link_width=\"...\", which NCCL requires: add it, e.g. link_width=\"16\"");
  EXPECT_EQ(error_of(broken("azure-ndv5-topo.xml", "link_width=\"16\"/>", "link_width=\"x16\"/>")),
            "nccl.xml:4: error: <pci> link_width=\"x16\": expected an integer (decimal or 0x-hex), e.g. "
            "link_width=\"16\"");
  EXPECT_EQ(error_of(broken("azure-ndv2-topo.xml", "version=\"1\"", "version=\"2\"")),
            "nccl.xml:1: error: <system version=\"2\">: NCCL reads version 1 only (NCCL_TOPO_XML_VERSION)");
  EXPECT_EQ(error_of(broken("azure-ndv2-topo.xml", " modelid=\"85\"", "")),
            "nccl.xml:2: error: <cpu> lacks modelid=\"...\", which NCCL requires: add it, e.g. modelid=\"143\"");
  EXPECT_EQ(error_of(broken("azure-ncv4-topo.xml", "busid=\"0002:00:00.0\"", "busid=\"none\"")),
            "nccl.xml:13: error: <pci> busid=\"none\": expected a PCI bus id such as \"0000:18:00.0\"");
  EXPECT_EQ(error_of(broken("ibm-gx3d-h100-topo.xml", " tclass=\"0x068000\"/>", "/>")),
            "nccl.xml:11: error: <nvlink> lacks tclass=\"...\", which NCCL requires: add it, e.g. tclass=\"0x068000\"");
  EXPECT_EQ(error_of(broken("azure-ndv2-topo.xml", "<cpu", "text <cpu")),
            "nccl.xml:2: error: text inside <system>: NCCL topology XML holds elements and attributes only");
  EXPECT_EQ(error_of(""), "nccl.xml:1: error: empty document: expected an <system> element");
  EXPECT_EQ(error_of(broken("azure-ndv2-topo.xml", "busid=\"0002:00:00.0\"", "busid=\"0001:00:00.0\"")),
            "nccl.xml:4: error: GPU 0001:00:00.0 is listed twice (first at line 3): list each device once");
}

TEST(NcclTopoImportErrors, NoGpuOrDisconnectedGpusAreErrors) {
  // A graph file (NCCL_GRAPH_FILE) is not a topology: no GPU.
  const std::string graph = "<graphs version=\"1\"><graph id=\"0\"/></graphs>";
  EXPECT_THAT(error_of(graph), HasSubstr("the root element is <graphs>"));
  std::string nogpu = testing::read_file(data("azure-ndv2-topo.xml"));
  for (std::size_t at; (at = nogpu.find("0x030200")) != std::string::npos;) nogpu.replace(at, 8, "0x010802");
  EXPECT_EQ(error_of(nogpu).substr(0, 38), "nccl.xml: error: no GPU in this file: ");
  // Two hosts (host_hash) whose CPUs NCCL never joins: the GPUs cannot reach each other.
  const std::string two_hosts =
      broken("azure-ndv2-topo.xml", "<cpu numaid=\"1\"", "<cpu host_hash=\"0x2\" numaid=\"1\"");
  EXPECT_THAT(error_of(two_hosts), HasSubstr("nccl.xml: error: topology 'nccl-topo' is not usable:"));
  EXPECT_THAT(error_of(two_hosts), HasSubstr("GPU 'gpu4' cannot be reached from 'gpu0'"));
  EXPECT_THAT(error_of(two_hosts), HasSubstr("the file holds 2 hosts (host_hash values)"));
}

}  // namespace
}  // namespace canopy
