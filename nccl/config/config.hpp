// ncclConfig_t as NCCL reads it: the magic 0xcafebeef, a version from NCCL 2.14, and only min(size, sizeof) bytes of
// it (a program built against an older nccl.h passes a shorter struct); what it does not reach keeps
// NCCL_CONFIG_INITIALIZER's value. Pure, tested on any CPU.
#pragma once

#include <nccl.h>

namespace canopy::nccl_api {

// Reads `config` (NULL: the defaults) into *out; a bad magic, version or size is ncclInvalidArgument with
// ncclGetLastError naming `function` and the fix.
ncclResult_t read_config(const ncclConfig_t* config, const char* function, ncclConfig_t* out);
// Whether an init with `config` (as read_config left it) returns before joining: blocking = 0, or blocking left
// unset (NCCL_CONFIG_UNDEF_INT) and NCCL_COMM_BLOCKING=0, as NCCL decides.
bool non_blocking(const ncclConfig_t& config);

}  // namespace canopy::nccl_api
