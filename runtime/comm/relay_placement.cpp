// place_relays (see relay_placement.hpp).
#include "runtime/comm/relay_placement.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

#include "codegen/relay_memory.hpp"
#include "core/error.hpp"
#include "planner/plan_eval.hpp"
#include "topology/topology_subset.hpp"

namespace canopy {

void place_relays(const Topology& topology, const std::vector<std::string>& relays,
                  const std::vector<int>& relay_ordinals, Placement* placement) {
  Placement& p = *placement;
  p.relay_names.clear();
  p.device_of_relay.clear();
  if (relays.empty()) {
    if (!relay_ordinals.empty())
      throw Error(fmt::format("relay devices {} are given without relays: name the relay GPUs (relays, as --gpus) or "
                              "give no relay devices",
                              fmt::join(relay_ordinals, ",")));
    return;
  }
  if (!relay_ordinals.empty() && relay_ordinals.size() != relays.size())
    throw Error(fmt::format("{} relay devices given for {} relays ({}): give one CUDA device per relay, or none (relay "
                            "k then runs on device k modulo the communicator's devices)",
                            relay_ordinals.size(), relays.size(), fmt::join(relays, ",")));
  // parse_gpu_list names unknown GPUs, switches and repeats (in its --gpus words).
  std::vector<NodeId> ids;
  try {
    ids = parse_gpu_list(topology, fmt::format("{}", fmt::join(relays, ",")));
  } catch (const Error& e) {
    throw Error(fmt::format("relays {}: {}", fmt::join(relays, ","), e.what()));
  }
  std::vector<std::pair<NodeId, int>> placed;  // (relay GPU, device index), sorted into topology order below
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const std::string& name = topology.node(ids[k]).name;
    if (std::find(p.rank_names.begin(), p.rank_names.end(), name) != p.rank_names.end())
      throw Error(fmt::format("relay {} is also a rank of this communicator: a GPU either holds a rank or relays; "
                              "leave it out of the relays (or of the GPUs)",
                              name));
    int device = static_cast<int>(k) % p.devices();
    if (!relay_ordinals.empty()) {
      const auto at = std::find(p.ordinals.begin(), p.ordinals.end(), relay_ordinals[k]);
      if (at == p.ordinals.end())
        throw Error(fmt::format("relay {} is placed on CUDA device {}, which runs none of this communicator's ranks "
                                "(devices {}): in one process a relay runs beside ranks; a relay on a GPU of its own "
                                "needs a process there (a relay agent)",
                                name, relay_ordinals[k], fmt::join(p.ordinals, ",")));
      device = static_cast<int>(at - p.ordinals.begin());
    }
    placed.emplace_back(ids[k], device);
  }
  std::sort(placed.begin(), placed.end());
  for (const auto& [id, device] : placed) {
    p.relay_names.push_back(topology.node(id).name);
    p.device_of_relay.push_back(device);
  }
}

CodegenOptions with_relays(const Plan& plan, const Topology& topology, const Placement& placement, std::int64_t cap,
                           CodegenOptions shape) {
  if (placement.relay_names.empty()) return shape;
  shape.relay_gpus = relay_gpus_of(plan, topology);
  shape.device_of_relay.clear();
  for (const std::string& gpu : shape.relay_gpus) {
    const auto at = std::find(placement.relay_names.begin(), placement.relay_names.end(), gpu);
    CANOPY_INTERNAL_ASSERT(at != placement.relay_names.end(), "a plan relayed through a GPU that is not a relay");
    shape.device_of_relay.push_back(placement.device_of_relay[at - placement.relay_names.begin()]);
  }
  return fit_relay_memory(plan, std::move(shape), cap);
}

}  // namespace canopy
