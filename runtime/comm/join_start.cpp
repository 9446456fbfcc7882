// name_ranks (join_start.hpp): the ranks a joined communicator names, as one process would place them.
#include "runtime/comm/join_start.hpp"

#include <fmt/format.h>

#include "runtime/comm/placement.hpp"

namespace canopy {

Status name_ranks(const Topology& topology, const GpuDevice& gpu, const std::vector<std::string>& gpu_list, int nranks,
                  std::vector<std::string>* out) {
  std::vector<std::string> names = place_ranks(topology, {gpu}, gpu_list, false).rank_names;
  if (static_cast<int>(names.size()) != nranks)
    return Status(StatusCode::invalid_argument,
                  fmt::format("join with nranks {} but topology {} lists {} GPUs{}: give as many ranks as GPUs (or "
                              "choose them with CommunicatorOptions::gpus)",
                              nranks, topology.name(), names.size(), gpu_list.empty() ? "" : " in gpus"));
  *out = std::move(names);
  return Status();
}

}  // namespace canopy
