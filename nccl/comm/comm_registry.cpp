// The registry of handles (comm_registry.hpp): a list under a mutex, never destroyed (asked at exit too).
#include "nccl/comm/comm_registry.hpp"

#include <mutex>

#include "nccl/comm/comm_handle.hpp"

namespace canopy::nccl_api {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::vector<ncclComm*>& registry() {
  static auto* handles = new std::vector<ncclComm*>();
  return *handles;
}

}  // namespace

void track_handle(ncclComm* comm) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  registry().push_back(comm);
}

std::vector<const ncclComm*> live_handles() {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<const ncclComm*> out;
  for (const ncclComm* c : registry())
    if (c->magic == kCanopyCommMagic && c->state == CommState::ready) out.push_back(c);
  return out;
}

}  // namespace canopy::nccl_api
