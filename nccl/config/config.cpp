// Reading a user's ncclConfig_t (config.hpp).
#include "nccl/config/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "nccl/base/last_error.hpp"

namespace canopy::nccl_api {

namespace {
constexpr unsigned kConfigMagic = 0xcafebeef;
}

ncclResult_t read_config(const ncclConfig_t* config, const char* function, ncclConfig_t* out) {
  *out = NCCL_CONFIG_INITIALIZER;
  if (!config) return ncclSuccess;
  if (config->magic != kConfigMagic)
    return fail(ncclInvalidArgument, fmt::format("{}: config->magic is {:#x}, not 0xcafebeef: initialise the config "
                                                 "with NCCL_CONFIG_INITIALIZER",
                                                 function, config->magic));
  if (config->version < NCCL_VERSION(2, 14, 0))
    return fail(ncclInvalidArgument, fmt::format("{}: config->version is {}: configs start at NCCL 2.14 (21400); "
                                                 "initialise the config with NCCL_CONFIG_INITIALIZER",
                                                 function, config->version));
  if (config->size < offsetof(ncclConfig_t, blocking) + sizeof(int))
    return fail(ncclInvalidArgument, fmt::format("{}: config->size is {}: too small for an ncclConfig_t", function,
                                                 config->size));
  std::memcpy(static_cast<void*>(out), config, std::min(config->size, sizeof(ncclConfig_t)));
  out->size = sizeof(ncclConfig_t);
  return ncclSuccess;
}

bool non_blocking(const ncclConfig_t& config) {
  if (config.blocking != NCCL_CONFIG_UNDEF_INT) return config.blocking == 0;
  const char* env = std::getenv("NCCL_COMM_BLOCKING");  // NCCL's default for configs that leave it unset
  return env && std::string(env) == "0";
}

}  // namespace canopy::nccl_api
