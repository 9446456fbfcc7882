// Host identity of a process (host_identity.hpp).
#include "runtime/hosts/host_identity.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>

namespace canopy {

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

std::string host_identity_from(const char* env, const std::string& hostname, const std::string& boot_id) {
  if (env && *env) return env;
  std::string id = boot_id;
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id.empty() ? hostname : hostname + ":" + id;
}

std::string host_identity() {
  std::string boot_id;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  if (in) std::getline(in, boot_id);
  return host_identity_from(std::getenv("CANOPY_HOST_ID"), host_name(), boot_id);
}

}  // namespace canopy
