// The Topology builder: declares nodes, adds up links, and refuses malformed ones at the call that made them.
#include "dsl/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "dsl/error.hpp"
#include "dsl/topology_check.hpp"

namespace canopy {

namespace {

constexpr std::size_t kMaxNameLength = 64;

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

Topology& Topology::arc(NodeId from, NodeId to, const Bandwidth& bandwidth) {
  check_id(from, "arc");
  check_id(to, "arc");
  if (from == to) throw Error(fmt::format("self-link: '{}' cannot link to itself", node(from).name));
  if (!std::isfinite(bandwidth.gbps) || bandwidth.gbps <= 0)
    throw Error(fmt::format("link {} -> {}: bandwidth must be a finite number of GB/s > 0, got {}", node(from).name,
                            node(to).name, bandwidth.gbps));
  if (!bandwidth.kind.empty()) {
    if (auto why = invalid_name_reason(bandwidth.kind))
      throw Error(fmt::format("invalid link kind '{}': {}", bandwidth.kind, *why));
  }
  auto key = std::tie(from, to, bandwidth.kind);
  auto it = std::lower_bound(arcs_.begin(), arcs_.end(), key,
                             [](const Arc& a, const auto& k) { return std::tie(a.from, a.to, a.kind) < k; });
  if (it != arcs_.end() && std::tie(it->from, it->to, it->kind) == key) {
    it->gbps += bandwidth.gbps;  // repeated links add up
  } else {
    arcs_.insert(it, Arc{from, to, bandwidth.kind, bandwidth.gbps});
  }
  return *this;
}

Topology& Topology::link(NodeId a, NodeId b, const Bandwidth& bandwidth) {
  arc(a, b, bandwidth);
  return arc(b, a, bandwidth);
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

int Topology::gpu_count() const { return static_cast<int>(gpu_ids().size()); }

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
                      it->gbps == a.gbps && !used[it - arcs.begin()];
    if (both) used[it - arcs.begin()] = 1;
    links.push_back({a.from, a.to, a.kind, a.gbps, both});
  }
  return links;
}

}  // namespace canopy
