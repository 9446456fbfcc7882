// ncclCanopyStatus (not NCCL's): what this process's Canopy communicators are and how they serve calls, as JSON, for
// `canopy.torch.status()` (the Python package) and anyone else who asks: per live handle (nccl/comm/comm_registry) its
// rank, size, device, ranks in this process, whether it spans processes, its topology, the protocol each collective
// takes at 4 KiB, 1 MiB and 256 MiB of f32, and the real NCCL beside it (made or why not, the calls forwarded to it,
// the tuning file's per-size choices).
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "core/version.hpp"
#include "nccl/api/export.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "nccl/comm/comm_registry.hpp"
#include "nccl/real/real_nccl.hpp"

namespace canopy::nccl_api {
namespace {

nlohmann::json forward_json(const ForwardSet& forward) {
  nlohmann::json out = nlohmann::json::array();
  for (Collective c : forward.collectives) out.push_back(to_string(c));
  for (PointToPointCall c : forward.point_to_point) out.push_back(to_string(c));
  return out;
}

nlohmann::json handle_json(const ncclComm& c) {
  nlohmann::json j = {{"rank", c.rank}, {"nranks", c.nranks}, {"device", c.device}};
  if (c.shared) {
    j["ranks_in_process"] = c.shared->own_ranks();
    j["across_processes"] = c.shared->across_processes();
    if (c.shared->has_communicator()) {  // a CPU test's SharedComm has none
      const Communicator& comm = c.shared->communicator();
      j["topology"] = comm.topology().name();
      j["topology_source"] = comm.topology_source();
      nlohmann::json protocols = nlohmann::json::object();
      for (Collective k : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                           Collective::reducescatter}) {
        nlohmann::json sizes = nlohmann::json::object();
        for (std::uint64_t bytes : {std::uint64_t{4} << 10, std::uint64_t{1} << 20, std::uint64_t{256} << 20})
          sizes[std::to_string(bytes)] = to_string(comm.protocol(k, bytes / 4, DataType::f32));
        protocols[to_string(k)] = std::move(sizes);
      }
      j["protocols"] = std::move(protocols);  // collective -> bytes -> LL | LL128 | direct | planned
    }
  }
  j["real_nccl"] = c.real ? nlohmann::json{{"made", true}, {"path", real_nccl_path()}}
                          : nlohmann::json{{"made", false}, {"why_not", c.real_why_not}};
  j["forwarded"] = forward_json(c.forward);
  if (c.choices)  // tuning.json's per-size choices: how many size buckets go to the real NCCL, and from which file
    j["library_choices"] = {{"nccl_buckets", c.choices->nccl_count()}, {"source", c.choices->source().string()}};
  return j;
}

std::string status_json() {
  nlohmann::json comms = nlohmann::json::array();
  for (const ncclComm* c : live_handles()) comms.push_back(handle_json(*c));
  return nlohmann::json{{"library", "libcanopy_nccl"}, {"version", CANOPY_VERSION}, {"communicators", comms}}.dump();
}

}  // namespace
}  // namespace canopy::nccl_api

extern "C" {

// The text stays valid until the next call from any thread.
CANOPY_NCCL_EXPORT const char* ncclCanopyStatus() {
  static std::mutex mutex;
  static std::string text;
  const std::lock_guard<std::mutex> lock(mutex);
  text = canopy::nccl_api::status_json();
  return text.c_str();
}

}  // extern "C"
