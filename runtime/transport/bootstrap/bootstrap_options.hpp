// BootstrapOptions: what make_unique_id and Bootstrap::join take beside the id (how long to wait, how long the root
// gives a connection to authenticate, which Canopy version this rank says it runs, where to log), and the environment
// they fall back on: CANOPY_BOOTSTRAP_TIMEOUT_S, CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/logger.hpp"
#include "core/version.hpp"

namespace canopy {

struct BootstrapOptions {
  // How long ranks wait for each other: to reach the root, for the group to form, for each allgather round.
  // Unset: CANOPY_BOOTSTRAP_TIMEOUT_S (default 120 s).
  std::optional<std::chrono::milliseconds> timeout;
  // The root's (make_unique_id): how long a new connection has to send its AUTH (the secret) before it is dropped.
  // Unset: CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S (default 5 s).
  std::optional<std::chrono::milliseconds> auth_timeout;
  // The version this rank's HELLO names; the root fails the group when two ranks differ (tests change it). The
  // loaded library's, not the headers' this program was compiled with: the library is what runs the collectives.
  std::string version = library_version();
  std::optional<Logger> logger;  // unset: Logger::from_environment() (CANOPY_LOG)
};

// The options with every unset field filled in. Throws canopy::Error when a variable is malformed.
struct BootstrapSettings {
  std::chrono::milliseconds timeout;
  std::chrono::milliseconds auth_timeout;
  std::string version;
  Logger logger;
};
BootstrapSettings settle(const BootstrapOptions& options);

// CANOPY_BOOTSTRAP_TIMEOUT_S: seconds, more than 0 (fractions allowed), default 120. Throws canopy::Error naming the
// variable when it is not such a number.
std::chrono::milliseconds bootstrap_timeout_from_environment();
// CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S: seconds, 0.001 to 3600 (fractions allowed), default 5. Throws as above.
std::chrono::milliseconds bootstrap_auth_timeout_from_environment();

// "120 s", "0.25 s": a timeout as the bootstrap's messages print it.
std::string seconds_text(std::chrono::milliseconds duration);

}  // namespace canopy
