// measure_links: the pure rules that turn copy rates into link figures, and measure_links itself, which times the
// copies through copy_timing.hpp (GPU).
#include "runtime/detect/measure_links.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "topology/topo_writer.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/detect/copy_timing.hpp"

namespace canopy {
namespace {

constexpr double kSameWithin = 0.05;  // directions closer than this share their mean

double round_centi(double gbps) { return std::max(0.01, std::round(gbps * 100) / 100); }

std::string figure(double gbps) { return format_gbps(round_centi(gbps)); }

// Forward and backward targets within 5% of each other become their mean; true when they did.
bool settle(std::optional<double>& forward, std::optional<double>& backward) {
  if (!forward || !backward) return false;
  if (std::abs(*forward - *backward) > kSameWithin * std::max(*forward, *backward)) return false;
  const double mean = (*forward + *backward) / 2;
  forward = backward = mean;
  return true;
}

// Arcs by endpoints, over node indices.
class ArcIndex {
 public:
  explicit ArcIndex(const Topology& t) : topology_(t) {
    for (std::size_t i = 0; i < t.arcs().size(); ++i) {
      const Arc& a = t.arcs()[i];
      between_[{a.from.index, a.to.index}].push_back(i);
      out_[a.from.index].insert(a.to.index);
    }
  }
  const std::vector<std::size_t>& between(int from, int to) const {
    static const std::vector<std::size_t> kNone;
    const auto it = between_.find({from, to});
    return it == between_.end() ? kNone : it->second;
  }
  bool linked(int from, int to) const { return !between(from, to).empty(); }
  // Relays `from` has an arc to.
  std::vector<int> relays_from(int from) const {
    std::vector<int> r;
    if (const auto it = out_.find(from); it != out_.end())
      for (int to : it->second)
        if (topology_.nodes()[to].kind == NodeKind::relay) r.push_back(to);
    return r;
  }
  double total(const std::vector<std::size_t>& arcs) const {
    double sum = 0;
    for (std::size_t i : arcs) sum += topology_.arcs()[i].gbps;
    return sum;
  }

 private:
  const Topology& topology_;
  std::map<std::pair<int, int>, std::vector<std::size_t>> between_;
  std::map<int, std::set<int>> out_;
};

// Sets `arcs` (nominal figures in `index`) to add up to `total`, keeping their proportions.
void scale_to(const ArcIndex& index, const std::vector<std::size_t>& arcs, double total, const Topology& nominal,
              std::vector<double>& gbps) {
  const double sum = index.total(arcs);
  for (std::size_t i : arcs) gbps[i] = round_centi(nominal.arcs()[i].gbps * total / sum);
}

// `t` with the arcs' bandwidths `arc_gbps` (in arcs() order) and the host links `hosts`; everything else kept.
Topology rebuilt(const Topology& t, const std::vector<double>& arc_gbps, const std::vector<HostLink>& hosts) {
  Topology out(t.name());
  for (const Node& node : t.nodes())
    if (node.kind == NodeKind::gpu)
      out.gpu(node.name);
    else
      out.relay(node.name);
  for (std::size_t i = 0; i < t.arcs().size(); ++i) {
    const Arc& a = t.arcs()[i];
    out.arc(a.from, a.to, {arc_gbps[i], a.kind, a.latency_us});  // copies measure bandwidth only
  }
  for (const HostLink& h : hosts) out.host_link(h.gpu, {h.gbps, h.kind});
  out.validate();
  return out;
}

std::string size_text(std::size_t bytes) {
  if (bytes % (std::size_t{1} << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes % (std::size_t{1} << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} bytes", bytes);
}

}  // namespace

std::vector<std::pair<int, int>> pairs_to_measure(const Topology& topology) {
  const std::vector<NodeId> gpus = topology.gpu_ids();
  const ArcIndex index(topology);
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < static_cast<int>(gpus.size()); ++a)
    for (int b = 0; b < static_cast<int>(gpus.size()); ++b) {
      if (a == b) continue;
      const int from = gpus[a].index, to = gpus[b].index;
      bool joined = index.linked(from, to);
      for (int relay : index.relays_from(from)) joined = joined || index.linked(relay, to);
      if (joined) pairs.emplace_back(a, b);
    }
  return pairs;
}

std::vector<std::pair<int, int>> duplex_pairs(const std::vector<std::pair<int, int>>& pairs) {
  const std::set<std::pair<int, int>> have(pairs.begin(), pairs.end());
  std::vector<std::pair<int, int>> out;
  for (const auto& [a, b] : have)
    if (a < b && have.count({b, a})) out.emplace_back(a, b);
  return out;
}

Topology apply_copy_rates(const Topology& nominal, const std::vector<CopyRate>& rates,
                          std::vector<std::string>& notes) {
  const std::vector<NodeId> gpus = nominal.gpu_ids();
  const int n = static_cast<int>(gpus.size());
  std::map<std::pair<int, int>, double> rate;
  for (const CopyRate& r : rates) {
    if (r.from < 0 || r.from >= n || r.to < 0 || r.to >= n || r.from == r.to || !(r.gbps > 0) ||
        !std::isfinite(r.gbps))
      throw Error(fmt::format("copy rate gpu index {} -> {} at {} GB/s does not fit topology '{}' with {} GPUs: "
                              "rates need two different GPU indices and a positive figure",
                              r.from, r.to, r.gbps, nominal.name(), n));
    rate[{r.from, r.to}] = r.gbps;
  }
  auto measured = [&](int a, int b) -> std::optional<double> {
    const auto it = rate.find({a, b});
    return it == rate.end() ? std::nullopt : std::optional<double>(it->second);
  };
  auto name = [&](int node) -> const std::string& { return nominal.nodes()[node].name; };

  const ArcIndex index(nominal);
  std::vector<double> gbps;
  for (const Arc& a : nominal.arcs()) gbps.push_back(a.gbps);

  // Direct GPU-GPU links.
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const int na = gpus[a].index, nb = gpus[b].index;
      const auto& ab = index.between(na, nb);
      const auto& ba = index.between(nb, na);
      std::optional<double> forward = ab.empty() ? std::nullopt : measured(a, b);
      std::optional<double> backward = ba.empty() ? std::nullopt : measured(b, a);
      if (!forward && !backward) continue;
      const bool same = settle(forward, backward);
      if (forward) scale_to(index, ab, *forward, nominal, gbps);
      if (backward) scale_to(index, ba, *backward, nominal, gbps);
      if (same)
        notes.push_back(fmt::format("{} <-> {}: the two directions are within 5%: {} GB/s each way (nominal {})",
                                    name(na), name(nb), figure(*forward), format_gbps(index.total(ab))));
      else
        for (const auto& [from, to, value, arcs] :
             {std::tuple{na, nb, forward, &ab}, std::tuple{nb, na, backward, &ba}})
          if (value)
            notes.push_back(fmt::format("{} -> {}: {} GB/s (nominal {})", name(from), name(to), figure(*value),
                                        format_gbps(index.total(*arcs))));
    }

  // Each GPU's links to switches, scaled to the best copy through them.
  for (int g = 0; g < n; ++g) {
    const int ng = gpus[g].index;
    const std::vector<int> switches = index.relays_from(ng);
    if (switches.empty()) continue;
    // Out of g: peers reached through one of g's switches and not linked directly.
    std::optional<double> out_best;
    int out_peer = -1;
    std::optional<double> in_best;
    int in_peer = -1;
    for (int p = 0; p < n; ++p) {
      if (p == g) continue;
      const int np = gpus[p].index;
      bool out_through = false, in_through = false;
      for (int s : switches) {
        out_through = out_through || index.linked(s, np);
        in_through = in_through || (index.linked(np, s) && index.linked(s, ng));
      }
      if (out_through && !index.linked(ng, np))
        if (auto r = measured(g, p); r && (!out_best || *r > *out_best)) out_best = r, out_peer = p;
      if (in_through && !index.linked(np, ng))
        if (auto r = measured(p, g); r && (!in_best || *r > *in_best)) in_best = r, in_peer = p;
    }
    if (!out_best && !in_best) continue;
    std::vector<std::size_t> out_arcs, in_arcs;
    std::vector<std::string> out_names, in_names;
    for (int s : switches) {
      if (out_best && index.linked(s, gpus[out_peer].index)) {
        const auto& arcs = index.between(ng, s);
        out_arcs.insert(out_arcs.end(), arcs.begin(), arcs.end());
        out_names.push_back(name(s));
      }
      if (in_best && index.linked(gpus[in_peer].index, s) && index.linked(s, ng)) {
        const auto& arcs = index.between(s, ng);
        in_arcs.insert(in_arcs.end(), arcs.begin(), arcs.end());
        in_names.push_back(name(s));
      }
    }
    const bool same = settle(out_best, in_best);
    if (out_best) scale_to(index, out_arcs, *out_best, nominal, gbps);
    if (in_best) scale_to(index, in_arcs, *in_best, nominal, gbps);
    std::vector<std::string> parts;
    if (out_best)
      parts.push_back(fmt::format("out to {} scaled from {} to {} GB/s in total (best copy: to {})",
                                  fmt::join(out_names, ", "), format_gbps(index.total(out_arcs)), figure(*out_best),
                                  name(gpus[out_peer].index)));
    if (in_best)
      parts.push_back(fmt::format("in from {} scaled from {} to {} GB/s in total (best copy: from {})",
                                  fmt::join(in_names, ", "), format_gbps(index.total(in_arcs)), figure(*in_best),
                                  name(gpus[in_peer].index)));
    notes.push_back(fmt::format("{}'s switch links{}: {}, proportions kept", name(ng),
                                same ? " (directions within 5%: their mean)" : "", fmt::join(parts, "; ")));
  }

  return rebuilt(nominal, gbps, nominal.host_links());
}

Topology apply_host_rates(const Topology& nominal, const std::vector<HostRate>& rates,
                          std::vector<std::string>& notes) {
  const std::vector<NodeId> gpus = nominal.gpu_ids();
  const int n = static_cast<int>(gpus.size());
  std::map<int, double> slower;  // by GPU index; a later rate for the same GPU wins
  for (const HostRate& r : rates) {
    if (r.gpu < 0 || r.gpu >= n || !(r.to_host_gbps > 0) || !(r.from_host_gbps > 0) || !std::isfinite(r.to_host_gbps) ||
        !std::isfinite(r.from_host_gbps))
      throw Error(
          fmt::format("host copy rates of gpu index {} ({} GB/s to the host, {} from it) do not fit topology "
                      "'{}' with {} GPUs: rates need a GPU index and two positive figures",
                      r.gpu, r.to_host_gbps, r.from_host_gbps, nominal.name(), n));
    slower[r.gpu] = round_centi(std::min(r.to_host_gbps, r.from_host_gbps));
  }
  std::vector<HostLink> hosts = nominal.host_links();
  for (const auto& [g, gbps] : slower) {
    const auto it = std::find_if(hosts.begin(), hosts.end(), [&](const HostLink& h) { return h.gpu == gpus[g]; });
    const std::string& name = nominal.node(gpus[g]).name;
    if (it == hosts.end()) {
      notes.push_back(
          fmt::format("{}'s host link: {} GB/s, the slower direction (none was given)", name, format_gbps(gbps)));
      hosts.push_back({gpus[g], gbps, ""});  // rebuilt() gives them to host_link, which keeps them sorted
    } else {
      notes.push_back(fmt::format("{}'s host link: {} GB/s, the slower direction (nominal {}{})", name,
                                  format_gbps(gbps), format_gbps(it->gbps), it->kind.empty() ? "" : " " + it->kind));
      it->gbps = gbps;
    }
  }
  std::vector<double> arc_gbps;
  for (const Arc& a : nominal.arcs()) arc_gbps.push_back(a.gbps);
  return rebuilt(nominal, arc_gbps, hosts);
}

MeasuredLinks measure_links(const Topology& nominal, const std::vector<int>& devices, const MeasureOptions& options) {
  const int n = nominal.gpu_count();
  if (static_cast<int>(devices.size()) != n)
    throw Error(fmt::format("measuring '{}' needs one CUDA device per GPU: {} GPUs but {} devices given",
                            nominal.name(), n, devices.size()));
  if (options.bytes == 0 || options.repeats < 1 || options.warmups < 0)
    throw Error("measure options: bytes and repeats must be positive and warmups not negative");

  MeasuredLinks result{nominal, {}, {}, {}, {}};
  const std::vector<std::pair<int, int>> pairs = pairs_to_measure(nominal);
  if (pairs.empty()) result.notes.push_back("measure: no two GPUs share a link or a switch, no peer copy to time");
  CopyResources resources;
  CANOPY_CUDA_CHECK(cudaGetDevice(&resources.previous_device));
  std::map<std::pair<int, int>, bool> p2p;
  for (const auto& [a, b] : pairs) {
    prepare_device(resources, devices[a], options.bytes);
    prepare_device(resources, devices[b], options.bytes);
    p2p[{a, b}] = enable_peer_access(resources, devices[a], devices[b]) &&
                  enable_peer_access(resources, devices[b], devices[a]);
  }
  const std::vector<NodeId> gpus = nominal.gpu_ids();
  for (const auto& [a, b] : pairs) {
    const double gbps = time_copies(resources, devices[a], devices[b], options);
    result.rates.push_back({a, b, gbps});
    result.notes.push_back(fmt::format("measured {} -> {}: {} GB/s (cudaMemcpyPeerAsync, median of {} copies "
                                       "of {} after {} warm-up{}{})",
                                       nominal.node(gpus[a]).name, nominal.node(gpus[b]).name, figure(gbps), options.repeats, size_text(options.bytes),
                                       options.warmups, options.warmups == 1 ? "" : "s",
                                       p2p[{a, b}] ? "" : "; no P2P access: staged through host memory"));
  }
  result.topology = apply_copy_rates(nominal, result.rates, result.notes);
  for (const auto& [a, b] : duplex_pairs(pairs)) {
    const auto [forward, backward] = time_duplex(resources, devices[a], devices[b], options);
    result.duplex.push_back({a, b, forward, backward});
    result.notes.push_back(fmt::format("measured {} <-> {} both ways at once: {} GB/s -> and {} GB/s <- ({} GB/s in "
                                       "all; cudaMemcpyPeerAsync on both GPUs' streams, median of {} rounds)",
                                       nominal.node(gpus[a]).name, nominal.node(gpus[b]).name, figure(forward),
                                       figure(backward), figure(forward + backward), options.repeats));
  }

  prepare_host(resources, options.bytes);
  for (int k = 0; k < n; ++k) {
    prepare_device(resources, devices[k], options.bytes);
    const double to_host = time_host_copies(resources, devices[k], /*to_host=*/true, options);
    const double from_host = time_host_copies(resources, devices[k], /*to_host=*/false, options);
    result.host_rates.push_back({k, to_host, from_host});
    result.notes.push_back(
        fmt::format("measured {} <-> pinned host memory: {} GB/s device to host, {} GB/s host to "
                    "device (cudaMemcpyAsync, median of {} copies of {} after {} warm-up{})",
                    nominal.node(gpus[k]).name, figure(to_host), figure(from_host), options.repeats,
                    size_text(options.bytes), options.warmups, options.warmups == 1 ? "" : "s"));
  }
  result.topology = apply_host_rates(result.topology, result.host_rates, result.notes);
  return result;
}

}  // namespace canopy
