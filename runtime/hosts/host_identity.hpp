// Which host a process runs on, as the multi-process join compares it (ProcessFacts::host): CANOPY_HOST_ID when set
// (tests make several "hosts" on one machine with it, as NCCL_HOSTID does for NCCL), else the hostname and the kernel's
// boot id ("box:4c1f...": two containers with one hostname on different machines differ). The hostname alone is what
// messages name.
#pragma once

#include <string>

namespace canopy {

std::string host_name();      // gethostname, or "unknown-host"
std::string host_identity();  // CANOPY_HOST_ID, else host_name() + ":" + /proc/sys/kernel/random/boot_id

// host_identity's rule on given parts (tested on any CPU): `env` (CANOPY_HOST_ID, may be null or empty), the hostname
// and the boot id's file contents (may be empty: then the hostname alone).
std::string host_identity_from(const char* env, const std::string& hostname, const std::string& boot_id);

}  // namespace canopy
