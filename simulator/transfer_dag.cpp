// LinkMap, node lookup, pipeline steps and the DAG size guard shared by the simulator's DAG builders.
#include "simulator/transfer_dag.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/byte_size.hpp"
#include "core/error.hpp"

namespace canopy::simulator {

LinkMap::LinkMap(const Topology& t, double latency_scale) {
  std::map<std::pair<int, int>, double> widest;
  for (const Arc& a : t.arcs()) {
    const std::pair<int, int> key{a.from.index, a.to.index};
    auto [it, fresh] = index.emplace(key, static_cast<int>(links.size()));
    if (fresh) {
      links.push_back({t.node(a.from).name, t.node(a.to).name, 0});
      latency_us.push_back(0);
    }
    const int l = it->second;
    links[l].gbps += a.gbps;
    if (a.gbps > widest[key]) widest[key] = a.gbps, latency_us[l] = latency_of(a) * latency_scale;
  }
}

std::pair<std::vector<int>, double> LinkMap::along(const Topology& t, const std::vector<int>& nodes) const {
  std::vector<int> out;
  double latency = 0;
  for (std::size_t i = 0; i + 1 < nodes.size(); ++i) {
    const auto it = index.find({nodes[i], nodes[i + 1]});
    if (it == index.end())
      throw Error(
          fmt::format("simulated path {} -> {} has no link", t.nodes()[nodes[i]].name, t.nodes()[nodes[i + 1]].name));
    out.push_back(it->second);
    latency += latency_us[it->second];
  }
  return {out, latency};
}

int node_of(const Topology& t, const std::string& name) {
  const auto id = t.find(name);
  if (!id) throw Error(fmt::format("'{}' is not a node of topology {}", name, t.name()));
  return id->index;
}

int steps_of(double bytes, std::int64_t chunk) {
  return std::max(1, static_cast<int>(std::ceil(bytes / static_cast<double>(chunk))));
}

void check_size(std::int64_t transfers, const SimOptions& o, double bytes, const char* what) {
  if (transfers <= o.max_transfers) return;
  const double scale = static_cast<double>(transfers) / o.max_transfers;
  std::int64_t fits = o.chunk_bytes;
  while (fits < o.chunk_bytes * scale) fits *= 2;
  throw Error(
      fmt::format("simulating {} of {} in chunks of {} takes {} "
                  "transfers (at most {}): use a chunk of at "
                  "least {}",
                  what, format_byte_size(static_cast<std::int64_t>(bytes)), format_byte_size(o.chunk_bytes), transfers,
                  o.max_transfers, format_byte_size(fits)));
}

SimTransfer chunk_transfer(double bytes, const std::vector<int>& links, double latency_us, double weight,
                           const SimOptions& o) {
  SimTransfer x;
  x.bytes = bytes;
  x.links = links;
  x.latency_us = latency_us;
  x.start_cost_us = o.chunk_cost_us;
  x.weight = weight;
  return x;
}

SimResult run_dag(const LinkMap& lm, const std::vector<SimTransfer>& transfers, std::int64_t bytes,
                  double busbw_factor, const SimOptions& o) {
  SimRun run = simulate_transfers(lm.links, transfers);
  SimResult r;
  r.time_us = o.launch_us + run.time_us;
  r.algbw_gbps = r.time_us > 0 ? static_cast<double>(bytes) / (r.time_us * 1e3) : 0;
  r.busbw_gbps = r.algbw_gbps * busbw_factor;
  r.chunk_bytes = o.chunk_bytes;
  r.transfers = static_cast<int>(transfers.size());
  r.links = lm.links;
  r.timelines = std::move(run.links);
  return r;
}

}  // namespace canopy::simulator
