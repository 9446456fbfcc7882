// topology_from_facts: NVLink pairs, NVSwitches, then PCIe and host nodes where NVLink leaves GPUs apart, and every
// GPU's host link.
#include "runtime/detect/topology_from_facts.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "topology/topo_writer.hpp"

namespace canopy {
namespace {

// NVLink5 (B200): 2 lanes x 212.5 Gb/s raw per link and direction, the NVLink4 convention (2 x 106.25) doubled;
// NVIDIA quotes 50 GB/s of data per link and direction (1.8 TB/s per GPU both ways over 18 links).
constexpr LinkType kNvlink5{"nvlink5", 53.125};
// GA10x (sm_86: RTX 3090, A40, RTX A6000) bridges: 4 NVLink3 links, 112.5 GB/s both ways in all.
constexpr LinkType kNvlink3Bridge{"nvlink3", 14.0625};
constexpr int kAssumedPcieGeneration = 4;

std::string gpu_node(int k) { return fmt::format("gpu{}", k); }

class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int find(int x) { return parent_[x] == x ? x : parent_[x] = find(parent_[x]); }
  void unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<int> parent_;
};

// The lanes of one NVLink connection (a GPU pair, or a GPU and a switch), counted at each end.
struct LaneGroup {
  int lanes_first = 0;   // seen from the lower-numbered GPU (the GPU, for a switch)
  int lanes_second = 0;  // seen from the higher-numbered GPU (GPU pairs only)
  std::set<int> versions;
  std::set<unsigned> nvml_versions;
  int lanes() const { return std::max(lanes_first, lanes_second); }
};

void add_lane(LaneGroup& group, const NvlinkLane& lane, bool first_end) {
  ++(first_end ? group.lanes_first : group.lanes_second);
  group.versions.insert(lane.version);
  group.nvml_versions.insert(lane.nvml_version);
}

// The per-lane figure for a group of lanes on `gpu`: the lowest known version; nvlink4 when none is known.
LinkType group_lane_type(const LaneGroup& group, const GpuFacts& gpu, const std::string& what,
                         std::vector<std::string>& notes) {
  std::optional<LinkType> lowest;
  for (int v : group.versions)  // ascending
    if (auto type = nvlink_lane_type(v, gpu.cc_major, gpu.cc_minor)) {
      lowest = type;
      break;
    }
  if (group.versions.size() > 1)
    notes.push_back(fmt::format("{}: lanes of different NVLink versions ({}): counted at the lowest known one", what,
                                fmt::join(group.versions, ", ")));
  if (lowest) return *lowest;
  notes.push_back(fmt::format("{}: NVLink version unknown (NVML reported {}, sm_{}{}): assumed nvlink4, {} GB/s per "
                              "lane each way; `canopy detect --measure` replaces it by a measured figure",
                              what, fmt::join(group.nvml_versions, ", "), gpu.cc_major, gpu.cc_minor,
                              format_gbps(nvlink4.gbps)));
  return nvlink4;
}

std::string source_note(const MachineFacts& facts) {
  if (facts.source == "nvml")
    return "source nvml: NVLink lanes, their versions and far ends, and PCIe generation and width from NVML "
           "(libnvidia-ml.so.1); devices and P2P access from the CUDA runtime; bandwidths are nominal";
  return fmt::format(
      "source cuda: NVML unavailable ({}): NVLink cannot be seen, so GPUs are joined through PCIe at assumed "
      "bandwidths; devices and P2P access from the CUDA runtime; `canopy detect --measure` measures real figures",
      facts.nvml_unavailable.empty() ? "no reason given" : facts.nvml_unavailable);
}

// "gpu0 = CUDA device 0: NVIDIA H200, sm_90, 140 GiB, PCI 0000:18:00.0, PCIe gen5 x16; NVLink: 18 lanes to gpu1".
std::string gpu_note(int k, const GpuFacts& gpu, const std::string& source, const std::vector<std::string>& nvlink) {
  const std::string pcie = gpu.pcie_generation > 0
                               ? fmt::format("PCIe gen{} x{}", gpu.pcie_generation, gpu.pcie_width > 0 ? gpu.pcie_width : 16)
                               : std::string("PCIe unknown");
  const std::string lanes = source != "nvml"   ? std::string("NVLink unknown without NVML")
                            : nvlink.empty() ? std::string("no active NVLink")
                                             : fmt::format("NVLink: {}", fmt::join(nvlink, ", "));
  return fmt::format("{} = CUDA device {}: {}, sm_{}{}, {:.0f} GiB, PCI {}, {}; {}", gpu_node(k), gpu.cuda_ordinal,
                     gpu.name, gpu.cc_major, gpu.cc_minor,
                     static_cast<double>(gpu.memory_bytes) / (1024.0 * 1024.0 * 1024.0), gpu.pci_bus_id, pcie, lanes);
}

std::string lanes_text(int lanes) { return fmt::format("{} lane{}", lanes, lanes == 1 ? "" : "s"); }

struct Link {
  std::string a;
  std::string b;
  Bandwidth bandwidth;
};

}  // namespace

std::optional<LinkType> nvlink_lane_type(int version, int cc_major, int cc_minor) {
  switch (version) {
    case 1: return nvlink1;
    case 2: return nvlink2;
    case 3: return cc_major == 8 && cc_minor == 6 ? kNvlink3Bridge : nvlink3;
    case 4: return nvlink4;
    case 5: return kNvlink5;
    default: return std::nullopt;
  }
}

std::optional<Bandwidth> pcie_bandwidth(int generation, int width) {
  // Per direction for x16: 2.5 and 5 GT/s with 8b/10b, then 8, 16, 32, 64 GT/s with 128b/130b (gen6 as 2 x gen5).
  static const std::map<int, Bandwidth> kX16 = {{1, {4.0, "pcie1"}},       {2, {8.0, "pcie2"}},
                                                {3, {pcie3.gbps, pcie3.kind}}, {4, {pcie4.gbps, pcie4.kind}},
                                                {5, {pcie5.gbps, pcie5.kind}}, {6, {126.0, "pcie6"}}};
  const auto it = kX16.find(generation);
  if (it == kX16.end()) return std::nullopt;
  Bandwidth b = it->second;
  if (width > 0 && width != 16) b.gbps = b.gbps * width / 16;
  return b;
}

DetectedTopology topology_from_facts(const MachineFacts& facts, const std::string& name) {
  const int n = static_cast<int>(facts.gpus.size());
  if (n == 0) throw Error("the machine facts list no GPU: there is nothing to describe");
  bool square = static_cast<int>(facts.peers.size()) == n;
  for (const auto& row : facts.peers) square = square && static_cast<int>(row.size()) == n;
  if (!square)
    throw Error(fmt::format("the machine facts' peers matrix must be {0} x {0}, one row and column per GPU", n));
  Topology topology(name);  // checks the name before any work

  std::map<std::string, int> gpu_by_bus;
  for (int k = 0; k < n; ++k) gpu_by_bus.emplace(normalize_pci_bus_id(facts.gpus[k].pci_bus_id), k);

  // NVLink lanes, grouped by GPU pair and by (GPU, switch).
  std::map<std::pair<int, int>, LaneGroup> pairs;
  std::vector<std::string> switch_ids;  // by first appearance: nvs0, nvs1, ...
  std::map<std::pair<int, int>, LaneGroup> to_switch;
  std::vector<std::string> left_out;
  for (int a = 0; a < n; ++a) {
    std::map<std::string, int> other_gpus;
    int cpu = 0, unknown = 0, self = 0;
    for (const NvlinkLane& lane : facts.gpus[a].nvlinks) {
      const std::string remote = normalize_pci_bus_id(lane.remote_bus_id);
      switch (lane.remote) {
        case NvlinkRemoteKind::gpu: {
          const auto it = gpu_by_bus.find(remote);
          if (remote.empty() || it == gpu_by_bus.end()) {
            ++other_gpus[remote.empty() ? "a GPU of unknown bus id" : remote];
          } else if (it->second == a) {
            ++self;
          } else {
            const int b = it->second;
            add_lane(pairs[{std::min(a, b), std::max(a, b)}], lane, a < b);
          }
          break;
        }
        case NvlinkRemoteKind::nvswitch: {
          auto at = std::find(switch_ids.begin(), switch_ids.end(), remote);
          if (at == switch_ids.end()) at = switch_ids.insert(switch_ids.end(), remote);
          add_lane(to_switch[{a, static_cast<int>(at - switch_ids.begin())}], lane, true);
          break;
        }
        case NvlinkRemoteKind::cpu: ++cpu; break;
        case NvlinkRemoteKind::unknown: ++unknown; break;
      }
    }
    for (const auto& [bus, lanes] : other_gpus)
      left_out.push_back(fmt::format("{}: {} to {}, which is not among the detected GPUs, left out (include it to "
                                     "use them)",
                                     gpu_node(a), lanes_text(lanes), bus));
    if (cpu)
      left_out.push_back(fmt::format("{}: {} to a CPU left out (GPU traffic is not routed through CPUs' NVLink)",
                                     gpu_node(a), lanes_text(cpu)));
    if (unknown)
      left_out.push_back(
          fmt::format("{}: {} whose far end NVML could not name, left out", gpu_node(a), lanes_text(unknown)));
    if (self) left_out.push_back(fmt::format("{}: {} looping back to itself left out", gpu_node(a), lanes_text(self)));
  }

  // Each GPU's NVLink as its note shows it: "18 lanes to gpu1", "5 lanes to nvs0".
  std::vector<std::vector<std::string>> nvlink_summary(n);
  for (const auto& [pair, group] : pairs) {
    if (group.lanes_first) nvlink_summary[pair.first].push_back(lanes_text(group.lanes_first) + " to " + gpu_node(pair.second));
    if (group.lanes_second) nvlink_summary[pair.second].push_back(lanes_text(group.lanes_second) + " to " + gpu_node(pair.first));
  }
  for (const auto& [key, group] : to_switch)
    nvlink_summary[key.first].push_back(fmt::format("{} to nvs{}", lanes_text(group.lanes_first), key.second));

  std::vector<std::string> notes{source_note(facts)};
  for (int k = 0; k < n; ++k) notes.push_back(gpu_note(k, facts.gpus[k], facts.source, nvlink_summary[k]));
  if (!switch_ids.empty()) {
    std::vector<std::string> named;
    for (std::size_t s = 0; s < switch_ids.size(); ++s)
      named.push_back(fmt::format("nvs{} at {}", s,
                                  switch_ids[s].empty() ? "an address NVML does not give (a VM, or switches the "
                                                          "fabric manager owns): every such lane counts as reaching it"
                                                        : switch_ids[s]));
    notes.push_back(fmt::format("NVSwitches: {}", fmt::join(named, ", ")));
  }
  notes.insert(notes.end(), facts.notes.begin(), facts.notes.end());

  std::vector<Link> links;
  UnionFind nvlink_parts(n);
  std::set<std::string> lane_types_noted;
  auto note_lane_type = [&](const LinkType& type) {
    if (lane_types_noted.insert(fmt::format("{} {}", type.kind, type.gbps)).second)
      notes.push_back(fmt::format("{} lanes count {} GB/s each way (the nominal raw signalling rate)", type.kind,
                                  format_gbps(type.gbps)));
  };
  for (const auto& [pair, group] : pairs) {
    const auto [a, b] = pair;
    const std::string what = fmt::format("{} <-> {}", gpu_node(a), gpu_node(b));
    const LinkType type = group_lane_type(group, facts.gpus[a], what, notes);
    note_lane_type(type);
    if (group.lanes_first != group.lanes_second)
      notes.push_back(fmt::format("{}: {} sees {} and {} sees {}; the larger count is used", what, gpu_node(a),
                                  lanes_text(group.lanes_first), gpu_node(b), lanes_text(group.lanes_second)));
    links.push_back({gpu_node(a), gpu_node(b), type * group.lanes()});
    nvlink_parts.unite(a, b);
  }
  std::vector<int> first_gpu_on_switch(switch_ids.size(), -1);
  for (const auto& [key, group] : to_switch) {
    const auto [a, s] = key;
    const std::string sw = fmt::format("nvs{}", s);
    const LinkType type = group_lane_type(group, facts.gpus[a], fmt::format("{} <-> {}", gpu_node(a), sw), notes);
    note_lane_type(type);
    links.push_back({gpu_node(a), sw, type * group.lanes()});
    if (first_gpu_on_switch[s] < 0)
      first_gpu_on_switch[s] = a;
    else
      nvlink_parts.unite(first_gpu_on_switch[s], a);
  }
  notes.insert(notes.end(), left_out.begin(), left_out.end());

  // GPUs NVLink joins that the CUDA runtime does not let reach each other.
  std::vector<std::string> nvlink_without_p2p;
  for (const auto& [pair, group] : pairs)
    if (!facts.p2p(pair.first, pair.second))
      nvlink_without_p2p.push_back(fmt::format("{}-{}", gpu_node(pair.first), gpu_node(pair.second)));
  if (!nvlink_without_p2p.empty())
    notes.push_back(fmt::format("warning: NVLink joins {} but the CUDA runtime grants no P2P access between them "
                                "(cudaDeviceCanAccessPeer): Canopy kernels cannot use these links until it does",
                                fmt::join(nvlink_without_p2p, ", ")));

  // PCIe and the host, when NVLink leaves some GPUs apart.
  std::vector<std::string> relays;
  for (std::size_t s = 0; s < switch_ids.size(); ++s) relays.push_back(fmt::format("nvs{}", s));
  std::set<int> nvlink_roots;
  for (int k = 0; k < n; ++k) nvlink_roots.insert(nvlink_parts.find(k));
  if (nvlink_roots.size() > 1) {
    UnionFind p2p_parts(n);
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b)
        if (facts.p2p(a, b)) p2p_parts.unite(a, b);
    std::map<int, std::vector<int>> groups;  // keyed by the lowest member, so in GPU order
    for (int k = 0; k < n; ++k) groups[p2p_parts.find(k)].push_back(k);

    std::vector<std::string> assumed;
    auto gpu_pcie = [&](int k) {
      const GpuFacts& g = facts.gpus[k];
      if (auto b = pcie_bandwidth(g.pcie_generation, g.pcie_width)) return *b;
      assumed.push_back(gpu_node(k));
      return *pcie_bandwidth(kAssumedPcieGeneration, 16);
    };
    int multi = 0, single = 0;
    for (const auto& [root, members] : groups) ++(members.size() > 1 ? multi : single);
    const bool host = !(multi == 1 && single == 0);
    int pcie_count = 0;
    for (const auto& [root, members] : groups) {
      if (members.size() == 1) {
        links.push_back({gpu_node(members[0]), "host0", gpu_pcie(members[0])});
        continue;
      }
      const std::string sw = fmt::format("pcie{}", pcie_count++);
      relays.push_back(sw);
      Bandwidth uplink;
      for (int k : members) {
        const Bandwidth b = gpu_pcie(k);
        if (b.gbps > uplink.gbps) uplink = b;
        links.push_back({gpu_node(k), sw, b});
      }
      if (host) links.push_back({sw, "host0", uplink});
    }
    if (host) relays.push_back("host0");

    notes.push_back(fmt::format(
        "{}: PCIe joins them, each GPU at its PCIe generation and width (the most GPU and slot allow, from NVML; "
        "x16 = 15.75 / 31.5 / 63 GB/s for gen3 / 4 / 5, scaled by width/16); GPUs with P2P access to each other "
        "share a PCIe switch (pcieK)",
        facts.source == "nvml" ? "NVLink does not join every GPU to every other" : "NVLink is unknown"));
    if (!assumed.empty())
      notes.push_back(fmt::format("PCIe generation unknown for {}: assumed gen{} x16, {} GB/s each way",
                                  fmt::join(assumed, ", "), kAssumedPcieGeneration,
                                  format_gbps(pcie_bandwidth(kAssumedPcieGeneration, 16)->gbps)));
    if (host)
      notes.push_back("host0 stands for the CPUs and their PCIe root complexes; PCIe switches reach it as fast as "
                      "their fastest GPU, GPUs without P2P to any other directly at their own PCIe rate");
    std::vector<std::string> apart;
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b)
        if (nvlink_parts.find(a) != nvlink_parts.find(b) && !facts.p2p(a, b))
          apart.push_back(fmt::format("{}-{}", gpu_node(a), gpu_node(b)));
    if (!apart.empty())
      notes.push_back(fmt::format(
          "warning: no NVLink path and no P2P access between {}: joined through {} only so the topology is "
          "connected; copies between them are staged through host memory, and Canopy kernels need P2P between "
          "ranks that exchange data (check the IOMMU/ACS settings, or choose GPUs that share a PCIe switch)",
          fmt::join(apart, ", "), host ? "host0" : "pcie0"));
  }

  // Host links: each GPU's copy-engine path to pinned host memory, at its PCIe rate when NVML gave both numbers.
  const std::vector<NodeId> gpu_ids = topology.gpus(n);
  std::vector<std::string> no_host;
  bool any_host = false;
  for (int k = 0; k < n; ++k) {
    const GpuFacts& g = facts.gpus[k];
    const auto b = g.pcie_width > 0 ? pcie_bandwidth(g.pcie_generation, g.pcie_width) : std::nullopt;
    if (!b) {
      no_host.push_back(gpu_node(k));
      continue;
    }
    topology.host_link(gpu_ids[k], *b);
    any_host = true;
  }
  if (any_host)
    notes.push_back(
        "host links: each GPU's PCIe rate (x16 = 15.75 / 31.5 / 63 GB/s for gen3 / 4 / 5, scaled by "
        "width/16), the nominal path of its copy engines to pinned host memory; `canopy detect --measure` "
        "measures them");
  if (!no_host.empty())
    notes.push_back(
        fmt::format("PCIe generation or width unknown for {}: no host link (`canopy detect --measure` "
                    "measures one)",
                    fmt::join(no_host, ", ")));
  for (const std::string& r : relays) topology.relay(r);
  for (const Link& l : links) topology.link(*topology.find(l.a), *topology.find(l.b), l.bandwidth);
  topology.validate();

  DetectedTopology detected{std::move(topology), facts.source, {}, std::move(notes)};
  for (const GpuFacts& g : facts.gpus) detected.gpu_names.push_back(g.name);
  return detected;
}

}  // namespace canopy
