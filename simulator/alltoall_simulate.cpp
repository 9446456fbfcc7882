// simulate_alltoall: every route of every pair as chunks hopping from GPU to GPU (switches crossed within a hop),
// run at once on the engine.
#include "simulator/alltoall_simulate.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "simulator/transfer_dag.hpp"

namespace canopy {

using simulator::LinkMap;

namespace {

// A path cut at the GPUs it crosses: each piece runs from one GPU through switches to the next.
std::vector<std::vector<int>> hops_between_gpus(const Topology& t, const AlltoallPath& path) {
  std::vector<std::vector<int>> hops(1);
  for (std::size_t i = 0; i < path.nodes.size(); ++i) {
    const int node = simulator::node_of(t, path.nodes[i]);
    hops.back().push_back(node);
    const bool inner_gpu = i > 0 && i + 1 < path.nodes.size() && t.nodes()[node].kind == NodeKind::gpu;
    if (inner_gpu) hops.push_back({node});
  }
  return hops;
}

}  // namespace

SimResult simulate_alltoall(const Topology& t, const std::vector<AlltoallPair>& routes, int ranks, std::int64_t bytes,
                            const SimOptions& o) {
  if (bytes < 0) throw Error(fmt::format("cannot simulate {} bytes", bytes));
  if (o.chunk_bytes < 1) throw Error(fmt::format("chunk size {} B: use at least 1 byte", o.chunk_bytes));
  if (ranks < 2) throw Error(fmt::format("an all-to-all needs at least 2 ranks, got {}", ranks));
  const LinkMap lm(t, o.latency_scale);
  const double block = static_cast<double>(bytes) / ranks;

  std::int64_t total = 0;
  for (const AlltoallPair& pair : routes)
    for (const AlltoallPath& path : pair.paths)
      total += static_cast<std::int64_t>(simulator::steps_of(block * path.share, o.chunk_bytes)) *
               static_cast<std::int64_t>(path.nodes.size());
  simulator::check_size(total, o, static_cast<double>(bytes), "alltoall");

  std::vector<SimTransfer> transfers;
  for (const AlltoallPair& pair : routes) {
    for (const AlltoallPath& path : pair.paths) {
      const double path_bytes = block * path.share;
      const int k = simulator::steps_of(path_bytes, o.chunk_bytes);
      std::vector<int> previous_hop;  // per chunk: the transfer that brought it to this hop's sender
      for (const std::vector<int>& hop : hops_between_gpus(t, path)) {
        const auto [links, latency] = lm.along(t, hop);
        std::vector<int> this_hop;
        for (int j = 0; j < k; ++j) {
          SimTransfer x = simulator::chunk_transfer(path_bytes / k, links, latency, path.share, o);
          if (!previous_hop.empty()) x.after_arrived = {previous_hop[j]};
          if (j > 0) x.after_sent = {this_hop.back()};
          this_hop.push_back(static_cast<int>(transfers.size()));
          transfers.push_back(std::move(x));
        }
        previous_hop = std::move(this_hop);
      }
    }
  }
  return simulator::run_dag(lm, transfers, bytes, static_cast<double>(ranks - 1) / ranks, o);
}

}  // namespace canopy
