// The topology over the GPUs of a communicator's processes (see process_topology.hpp).
#include "runtime/processes/process_topology.hpp"

#include <fmt/format.h>

#include <map>

#include "runtime/detect/detect_topology.hpp"

namespace canopy {

Status process_ordinals(const std::vector<ProcessFacts>& all, const std::vector<GpuDevice>& visible,
                        std::vector<int>* out) {
  out->clear();
  std::map<std::string, int> first_on_gpu;  // uuid -> the first process on it
  for (std::size_t p = 0; p < all.size(); ++p) {
    const ProcessFacts& f = all[p];
    const int process = static_cast<int>(p);
    if (f.host != all[0].host)
      return Status(StatusCode::unsupported,
                    fmt::format("{} runs on host {}, process 0 on host {}: a communicator over several hosts needs a "
                                "topology naming every host's GPUs and their network links (CommunicatorOptions::"
                                "topology; docs/multi-host.md)",
                                describe_process(f, process, false), f.host, all[0].host));
    if (f.ranks != 1)
      return Status(StatusCode::unsupported,
                    fmt::format("{} holds {} ranks on its GPU while other processes run on other GPUs: with processes "
                                "on different GPUs each holds one rank (or give a topology naming every rank's GPU)",
                                describe_process(f, process, false), f.ranks));
    const auto [at, fresh] = first_on_gpu.emplace(f.gpu.uuid, process);
    if (!fresh)
      return Status(StatusCode::unsupported,
                    fmt::format("{} and process {} share GPU {} while other processes run on other GPUs: give each "
                                "process a GPU of its own (set the device by local rank), or run every process on one "
                                "GPU",
                                describe_process(f, process, false), at->second, f.gpu.uuid.substr(0, 8)));
    int ordinal = -1;
    for (const GpuDevice& g : visible)
      if (g.uuid == f.gpu.uuid) ordinal = g.ordinal;
    if (ordinal < 0)
      return Status(StatusCode::unsupported,
                    fmt::format("{} runs on GPU {} ({}), which this process cannot see (it sees {} GPU{}): every "
                                "process of a host must see every GPU of the communicator to reach its memory; do not "
                                "narrow CUDA_VISIBLE_DEVICES per process, choose the device with cudaSetDevice instead",
                                describe_process(f, process, false), f.gpu.uuid.substr(0, 8), f.gpu.name,
                                visible.size(), visible.size() == 1 ? "" : "s"));
    out->push_back(ordinal);
  }
  return Status();
}

Status detect_process_topology(const std::vector<ProcessFacts>& all, const std::vector<GpuDevice>& visible,
                               Topology* out) {
  std::vector<int> ordinals;
  if (Status s = process_ordinals(all, visible, &ordinals); !s.ok()) return s;
  *out = detect_topology(ordinals).topology;
  return Status();
}

}  // namespace canopy
