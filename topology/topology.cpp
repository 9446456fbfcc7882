// The Topology builder: declares nodes, adds up links, gives GPUs host links, and refuses malformed ones at the call
// that made them.
#include "topology/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/error.hpp"
#include "topology/topology_check.hpp"

namespace canopy {

namespace {

constexpr std::size_t kMaxNameLength = 64;

bool latency_given(double us) { return us >= 0; }

// The arc (from, to, kind) in sorted `arcs`, or arcs.end().
std::vector<Arc>::const_iterator find_arc(const std::vector<Arc>& arcs, NodeId from, NodeId to,
                                          const std::string& kind) {
  auto it = std::lower_bound(arcs.begin(), arcs.end(), std::tie(from, to, kind),
                             [](const Arc& a, const auto& k) { return std::tie(a.from, a.to, a.kind) < k; });
  return it != arcs.end() && it->from == from && it->to == to && it->kind == kind ? it : arcs.end();
}

// Why a latency cannot be used, or nullopt when it can; `unset_allowed`: a negative value means "not given".
std::optional<std::string> invalid_latency_reason(double us, bool unset_allowed) {
  if (std::isfinite(us) && us <= kMaxLatencyUs && (unset_allowed || us >= 0)) return std::nullopt;
  return fmt::format("latency must be a finite number of microseconds >= 0 and at most {}{}, got {}", kMaxLatencyUs,
                     unset_allowed ? " (or negative: not given)" : "", us);
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }

}  // namespace

std::optional<std::string> invalid_name_reason(std::string_view name) {
  if (name.empty()) return "a name cannot be empty";
  if (name.size() > kMaxNameLength) return fmt::format("a name has at most {} characters", kMaxNameLength);
  if (!is_name_start(name.front()) || !std::all_of(name.begin(), name.end(), is_name_char))
    return "names start with a letter or '_' and use only letters, digits, '_', '-' and '.'";
  return std::nullopt;
}

std::string to_string(NodeKind kind) { return kind == NodeKind::gpu ? "gpu" : "switch"; }

Bandwidth Bandwidth::with_latency(double us) const {
  if (auto why = invalid_latency_reason(us, false)) throw Error("with_latency: " + *why);
  Bandwidth b = *this;
  b.latency_us = us + 0.0;  // -0 becomes 0
  return b;
}

double default_latency_us(std::string_view kind) {
  if (kind.starts_with("nvlink")) return 0.7;
  if (kind.starts_with("pcie")) return 1.2;
  if (kind == "qpi" || kind == "xgmi") return 0.6;
  if (kind == "ib") return 2.0;
  if (kind == "eth") return 5.0;
  return 1.0;
}

double latency_of(const Arc& arc) {
  return latency_given(arc.latency_us) ? arc.latency_us : default_latency_us(arc.kind);
}

Topology::Topology(std::string name) : name_(std::move(name)) {
  if (auto why = invalid_name_reason(name_)) throw Error(fmt::format("invalid topology name '{}': {}", name_, *why));
}

NodeId Topology::add_node(std::string name, NodeKind kind) {
  if (auto why = invalid_name_reason(name)) throw Error(fmt::format("invalid node name '{}': {}", name, *why));
  if (find(name)) throw Error(fmt::format("duplicate node name '{}' in topology '{}'", name, name_));
  if (static_cast<int>(nodes_.size()) >= kMaxNodes)
    throw Error(fmt::format("topology '{}' has too many nodes: at most {} are supported", name_, kMaxNodes));
  nodes_.push_back({std::move(name), kind});
  return NodeId{static_cast<int>(nodes_.size()) - 1};
}

NodeId Topology::gpu(std::string name) { return add_node(std::move(name), NodeKind::gpu); }
NodeId Topology::relay(std::string name) { return add_node(std::move(name), NodeKind::relay); }

std::vector<NodeId> Topology::gpus(int count) {
  if (count < 1 || count > kMaxNodes)
    throw Error(fmt::format("gpus({}): the count must be between 1 and {}", count, kMaxNodes));
  std::vector<NodeId> ids;
  ids.reserve(count);
  for (int i = 0; i < count; ++i) ids.push_back(gpu(fmt::format("gpu{}", i)));
  return ids;
}

void Topology::check_id(NodeId id, const char* what) const {
  if (id.index < 0 || id.index >= static_cast<int>(nodes_.size()))
    throw Error(fmt::format("{}: node id {} does not belong to topology '{}' (it has {} nodes)", what, id.index,
                            name_, nodes_.size()));
}

void Topology::check_arc(NodeId from, NodeId to, const Bandwidth& bandwidth) const {
  check_id(from, "arc");
  check_id(to, "arc");
  if (from == to) throw Error(fmt::format("self-link: '{}' cannot link to itself", node(from).name));
  if (!std::isfinite(bandwidth.gbps) || bandwidth.gbps <= 0)
    throw Error(fmt::format("link {} -> {}: bandwidth must be a finite number of GB/s > 0, got {}", node(from).name,
                            node(to).name, bandwidth.gbps));
  if (auto why = invalid_latency_reason(bandwidth.latency_us, true))
    throw Error(fmt::format("link {} -> {}: {}", node(from).name, node(to).name, *why));
  if (!bandwidth.kind.empty()) {
    if (auto why = invalid_name_reason(bandwidth.kind))
      throw Error(fmt::format("invalid link kind '{}': {}", bandwidth.kind, *why));
  }
  // A repeated link adds bandwidth to one arc, which has one latency.
  if (!latency_given(bandwidth.latency_us)) return;
  const auto it = find_arc(arcs_, from, to, bandwidth.kind);
  if (it != arcs_.end() && latency_given(it->latency_us) && it->latency_us != bandwidth.latency_us + 0.0) {
    throw Error(fmt::format("link {} -> {}{}: latency {} differs from the {} microseconds given before; repeated "
                            "links of one kind add bandwidth and must give the same latency (or none)",
                            node(from).name, node(to).name,
                            bandwidth.kind.empty() ? "" : fmt::format(" ({})", bandwidth.kind), bandwidth.latency_us,
                            it->latency_us));
  }
}

void Topology::add_arc(NodeId from, NodeId to, const Bandwidth& bandwidth) {
  const double latency = latency_given(bandwidth.latency_us) ? bandwidth.latency_us + 0.0 : -1;  // one "not given"
  auto it = std::lower_bound(arcs_.begin(), arcs_.end(), std::tie(from, to, bandwidth.kind),
                             [](const Arc& a, const auto& k) { return std::tie(a.from, a.to, a.kind) < k; });
  if (it != arcs_.end() && it->from == from && it->to == to && it->kind == bandwidth.kind) {
    it->gbps += bandwidth.gbps;  // repeated links add up
    if (latency_given(latency)) it->latency_us = latency;  // check_arc made sure it agrees with any given before
  } else {
    arcs_.insert(it, Arc{from, to, bandwidth.kind, bandwidth.gbps, latency});
  }
}

Topology& Topology::arc(NodeId from, NodeId to, const Bandwidth& bandwidth) {
  check_arc(from, to, bandwidth);
  add_arc(from, to, bandwidth);
  return *this;
}

Topology& Topology::link(NodeId a, NodeId b, const Bandwidth& bandwidth) {
  check_arc(a, b, bandwidth);  // both directions before either is added
  check_arc(b, a, bandwidth);
  add_arc(a, b, bandwidth);
  add_arc(b, a, bandwidth);
  return *this;
}

Topology& Topology::host_link(NodeId gpu, const Bandwidth& bandwidth) {
  check_id(gpu, "host_link");
  const Node& n = node(gpu);
  if (n.kind != NodeKind::gpu)
    throw Error(
        fmt::format("host link of '{}': it is a switch; only a GPU has a host link (its copy engines' path "
                    "to pinned host memory), so pass a GPU's id",
                    n.name));
  if (!std::isfinite(bandwidth.gbps) || bandwidth.gbps <= 0)
    throw Error(fmt::format("host link of '{}': bandwidth must be a finite number of GB/s > 0, got {}", n.name,
                            bandwidth.gbps));
  if (!bandwidth.kind.empty()) {
    if (auto why = invalid_name_reason(bandwidth.kind))
      throw Error(fmt::format("invalid link kind '{}': {}", bandwidth.kind, *why));
  }
  auto it = std::lower_bound(host_links_.begin(), host_links_.end(), gpu,
                             [](const HostLink& h, NodeId id) { return h.gpu < id; });
  if (it != host_links_.end() && it->gpu == gpu)
    throw Error(
        fmt::format("host link of '{}' given twice (first {} GB/s{}): a GPU has one host link; give its "
                    "total bandwidth once",
                    n.name, it->gbps, it->kind.empty() ? "" : " " + it->kind));
  host_links_.insert(it, HostLink{gpu, bandwidth.gbps, bandwidth.kind});
  return *this;
}

std::optional<double> Topology::host_gbps(NodeId gpu) const {
  check_id(gpu, "host_gbps");
  const auto it = std::lower_bound(host_links_.begin(), host_links_.end(), gpu,
                                   [](const HostLink& h, NodeId id) { return h.gpu < id; });
  if (it == host_links_.end() || it->gpu != gpu) return std::nullopt;
  return it->gbps;
}

void Topology::validate() const {
  auto problems = find_problems(*this);
  if (problems.empty()) return;
  std::string message = fmt::format("topology '{}' is not usable:", name_);
  for (const auto& p : problems) message += "\n  " + p.message;
  throw Error(message);
}

const Node& Topology::node(NodeId id) const {
  check_id(id, "node");
  return nodes_[id.index];
}

std::optional<NodeId> Topology::find(std::string_view name) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].name == name) return NodeId{static_cast<int>(i)};
  return std::nullopt;
}

std::vector<NodeId> Topology::gpu_ids() const {
  std::vector<NodeId> ids;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].kind == NodeKind::gpu) ids.push_back(NodeId{static_cast<int>(i)});
  return ids;
}

std::vector<std::string> Topology::gpu_names() const {
  std::vector<std::string> out;
  for (NodeId g : gpu_ids()) out.push_back(node(g).name);
  return out;
}

int Topology::gpu_count() const { return static_cast<int>(gpu_ids().size()); }

bool is_nvlink(const Arc& arc) { return arc.kind.rfind("nvlink", 0) == 0; }

std::vector<NodeId> switch_path(const Topology& t, NodeId from, NodeId to, const std::function<bool(const Arc&)>& usable) {
  const std::size_t n = t.nodes().size();
  std::vector<std::vector<int>> next(n);
  for (const Arc& a : t.arcs())
    if (!usable || usable(a)) next[a.from.index].push_back(a.to.index);
  std::vector<int> parent(n, -1);
  std::vector<int> queue{from.index};
  parent[from.index] = from.index;
  for (std::size_t head = 0; head < queue.size() && parent[to.index] < 0; ++head) {
    const int x = queue[head];
    if (x != from.index && t.nodes()[x].kind == NodeKind::gpu) continue;  // GPUs do not forward
    for (int y : next[x])
      if (parent[y] < 0) parent[y] = x, queue.push_back(y);
  }
  if (parent[to.index] < 0) return {};
  std::vector<NodeId> path{to};
  for (int v = to.index; v != from.index; v = parent[v]) path.push_back(NodeId{parent[v]});
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<LinkView> paired_links(const Topology& t) {
  const auto& arcs = t.arcs();
  std::vector<char> used(arcs.size(), 0);
  std::vector<LinkView> links;
  for (std::size_t i = 0; i < arcs.size(); ++i) {
    if (used[i]) continue;
    const Arc& a = arcs[i];
    used[i] = 1;
    // Arcs are sorted and unique per (from, to, kind): the reverse arc is one binary search away.
    auto it = std::lower_bound(arcs.begin(), arcs.end(), a, [](const Arc& x, const Arc& k) {
      return std::tie(x.from, x.to, x.kind) < std::tie(k.to, k.from, k.kind);
    });
    const bool both = it != arcs.end() && it->from == a.to && it->to == a.from && it->kind == a.kind &&
                      it->gbps == a.gbps && it->latency_us == a.latency_us && !used[it - arcs.begin()];
    if (both) used[it - arcs.begin()] = 1;
    links.push_back({a.from, a.to, a.kind, a.gbps, both, a.latency_us});
  }
  return links;
}

}  // namespace canopy
