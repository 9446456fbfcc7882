// Topology: the interconnect as plain data, and a builder that reads like a wiring diagram.
//
//   canopy::Topology t("dgx1-v100");
//   auto g = t.gpus(8);                        // gpu0..gpu7
//   auto pcie0 = t.relay("pcie0");             // a switch: forwards data, never a rank
//   t.link(g[0], g[3], canopy::nvlink2 * 2);   // two NVLink2 lanes, 50 GB/s each way
//   t.link(g[0], pcie0, canopy::pcie3);
//   t.arc(g[4], g[5], {12.5, "nvlink2"});     // one direction only (a degraded lane)
//   t.link(g[1], pcie0, canopy::pcie3.with_latency(1.5));  // with a per-hop latency in µs (optional)
//   t.validate();                              // every GPU reaches every other GPU
//
// Bandwidths are GB/s (1e9 bytes/s) per direction. Repeated links between the same nodes with the same kind add
// up (and must agree on latency). A link given no latency gets default_latency_us(kind) wherever one is needed.
// The same model is written as text in `.topo` files (topology/topo_reader.hpp, docs/topology.md).
#pragma once

#include <compare>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace canopy {

enum class NodeKind { gpu, relay };  // relay: NVSwitch, PCIe switch, CPU, NIC, network switch (`switch` in .topo)

struct Node {
  std::string name;
  NodeKind kind = NodeKind::gpu;
  friend bool operator==(const Node&, const Node&) = default;
};

// Index of a node in Topology::nodes(); returned by the builder, accepted by link() and arc().
struct NodeId {
  int index = -1;
  friend auto operator<=>(const NodeId&, const NodeId&) = default;
};

// The largest per-hop latency a link may have, in µs (the builder's and the .topo reader's bound).
inline constexpr double kMaxLatencyUs = 1e6;

// A bandwidth with the link kind it comes from, e.g. `nvlink2 * 2` = {50, "nvlink2"}, and optionally the
// latency of one hop over it: `(nvlink2 * 2).with_latency(0.9)` = {50, "nvlink2", 0.9}.
struct Bandwidth {
  double gbps = 0;
  std::string kind;        // informative: "nvlink2", "pcie4", "ib", ... (may be empty)
  double latency_us = -1;  // µs per hop; negative: not given (default_latency_us(kind) applies)

  // A copy with the latency given; throws canopy::Error unless 0 <= us <= 1e6.
  Bandwidth with_latency(double us) const;
};

// One lane (or one x16 slot) of a known interconnect; multiply by a lane count.
struct LinkType {
  const char* kind;
  double gbps;  // per direction
  Bandwidth operator*(int lanes) const { return {gbps * lanes, kind}; }
  operator Bandwidth() const { return {gbps, kind}; }  // NOLINT: a LinkType is one lane's Bandwidth
  Bandwidth with_latency(double us) const { return Bandwidth(*this).with_latency(us); }
};

// Nominal per-direction figures (see docs/topology.md for their sources).
inline constexpr LinkType nvlink1{"nvlink1", 20.0};     // P100: 20 GB/s per link
inline constexpr LinkType nvlink2{"nvlink2", 25.0};     // V100: 25 GB/s per link
inline constexpr LinkType nvlink3{"nvlink3", 25.0};     // A100: 25 GB/s per link
inline constexpr LinkType nvlink4{"nvlink4", 26.5625};  // H100/H200: 2 lanes x 106.25 Gb/s raw per link
inline constexpr LinkType pcie3{"pcie3", 15.75};        // x16, 8 GT/s, 128b/130b
inline constexpr LinkType pcie4{"pcie4", 31.5};         // x16, 16 GT/s
inline constexpr LinkType pcie5{"pcie5", 63.0};         // x16, 32 GT/s
inline constexpr LinkType qpi{"qpi", 19.2};             // one 9.6 GT/s QPI link
inline constexpr LinkType ib_edr{"ib", 12.5};           // 100 Gb/s InfiniBand EDR port
inline constexpr LinkType ib_ndr{"ib", 50.0};           // 400 Gb/s InfiniBand NDR port

// A directed link with its total capacity. Topology keeps one Arc per (from, to, kind), sorted.
struct Arc {
  NodeId from;
  NodeId to;
  std::string kind;
  double gbps = 0;
  double latency_us = -1;  // µs per hop as given; negative: not given (see latency_of)
  friend bool operator==(const Arc&, const Arc&) = default;
};

// The nominal latency of one hop over a link of this kind, in µs, for links given none: `nvlink*` 0.7, `pcie*` 1.2,
// `qpi` and `xgmi` 0.6, `ib` 2.0, `eth` 5.0, anything else (the empty kind included) 1.0. These are starting
// points that the simulator calibrates against measurements, not measured figures.
double default_latency_us(std::string_view kind);

// The arc's latency as given, else default_latency_us(arc.kind).
double latency_of(const Arc& arc);

// A GPU's path to pinned host memory: its copy engines over PCIe, both directions at `gbps`. Not a link of the graph:
// trees never cross it. The runtime stages a share of large broadcasts and reduces through it beside the trees
// (Blink's hybrid transfers; planner/host_share.hpp says how much). `.topo`: `host gpu0 55.2 pcie5`.
struct HostLink {
  NodeId gpu;
  double gbps = 0;   // per direction
  std::string kind;  // informative: "pcie5", ...
  friend bool operator==(const HostLink&, const HostLink&) = default;
};

class Topology {
 public:
  static constexpr int kMaxNodes = 4096;

  explicit Topology(std::string name);

  // Declaring nodes. Names: a letter or '_' first, then letters, digits, '_', '-', '.'; unique.
  NodeId gpu(std::string name);
  std::vector<NodeId> gpus(int count);  // gpu0 .. gpu{count-1}
  NodeId relay(std::string name);

  // Linking nodes: `link` adds both directions, `arc` one. Bandwidth must be finite and > 0; a latency, when given
  // (>= 0), at most 1e6 µs. Repeating a link of the same kind adds its bandwidth; the latencies must then be equal
  // or given once (the given one is kept). A refused call leaves the topology unchanged.
  Topology& link(NodeId a, NodeId b, const Bandwidth& bandwidth);
  Topology& arc(NodeId from, NodeId to, const Bandwidth& bandwidth);

  // Throws canopy::Error naming every GPU that cannot reach, or be reached from, the others.
  void validate() const;

  const std::string& name() const { return name_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Arc>& arcs() const { return arcs_; }  // sorted by (from, to, kind)
  // Host paths. `host_link` throws canopy::Error unless `gpu` is a GPU without one yet and the bandwidth is finite
  // and > 0 (a latency is not used); a refused call leaves the topology unchanged.
  Topology& host_link(NodeId gpu, const Bandwidth& bandwidth);
  const std::vector<HostLink>& host_links() const { return host_links_; }  // sorted by GPU index
  std::optional<double> host_gbps(NodeId gpu) const;                       // nullopt: no host path given
  const Node& node(NodeId id) const;
  std::optional<NodeId> find(std::string_view name) const;
  std::vector<NodeId> gpu_ids() const;  // in declaration order: this is rank order
  std::vector<std::string> gpu_names() const;  // the same GPUs' names
  int gpu_count() const;

  friend bool operator==(const Topology&, const Topology&) = default;

 private:
  NodeId add_node(std::string name, NodeKind kind);
  void check_id(NodeId id, const char* what) const;
  void check_arc(NodeId from, NodeId to, const Bandwidth& bandwidth) const;  // throws what arc() would refuse
  void add_arc(NodeId from, NodeId to, const Bandwidth& bandwidth);          // after check_arc

  std::string name_;
  std::vector<Node> nodes_;
  std::vector<Arc> arcs_;
  std::vector<HostLink> host_links_;
};

// An arc, or a pair of opposite arcs with equal kind, bandwidth and latency folded into one bidirectional link: how
// .topo, tables and pictures show links. `paired_links` lists them in the sorted order of their first arc.
struct LinkView {
  NodeId a;
  NodeId b;
  std::string kind;
  double gbps = 0;
  bool both_ways = false;  // true: a <-> b at gbps each way; false: a -> b only
  double latency_us = -1;  // as in Arc: negative when not given
};
std::vector<LinkView> paired_links(const Topology& topology);

// Whether the arc is an NVLink (kind nvlink1 .. nvlink4).
bool is_nvlink(const Arc& arc);

// The fewest-hop path from `from` to `to` that crosses switches only (no other GPU forwards, as NCCL's P2P paths),
// over the arcs `usable` accepts (every arc when empty), as nodes from..to; empty when there is none.
std::vector<NodeId> switch_path(const Topology& topology, NodeId from, NodeId to,
                                const std::function<bool(const Arc&)>& usable = {});

// Why a name is not a valid node or topology name, or nullopt when it is.
std::optional<std::string> invalid_name_reason(std::string_view name);

std::string to_string(NodeKind kind);  // "gpu" | "switch"

}  // namespace canopy
