// BootstrapOptions' defaults from the environment (see bootstrap_options.hpp).
#include "runtime/transport/bootstrap/bootstrap_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "core/error.hpp"

namespace canopy {

namespace {
// Seconds from variable `name` (default `fallback`), `min` to `max`; `what` says in the error what they are for.
std::chrono::milliseconds seconds_from_environment(const char* name, std::chrono::milliseconds fallback, double min,
                                                   double max, const char* what) {
  const char* value = std::getenv(name);
  if (!value || !*value) return fallback;
  const std::string_view v(value);
  double seconds = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
  if (ec != std::errc() || end != v.data() + v.size() || !(seconds >= min && seconds <= max))
    throw Error(fmt::format("{}='{}': expected the seconds {}, {} to {}, e.g. {} (the default) or 0.5", name, v,
                            what, min, max, fallback.count() / 1000));
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000 + 0.5));
}
}  // namespace

std::chrono::milliseconds bootstrap_timeout_from_environment() {
  return seconds_from_environment("CANOPY_BOOTSTRAP_TIMEOUT_S", std::chrono::seconds(120), 0.001, 1e6,
                                  "ranks wait for each other while they bootstrap");
}

std::chrono::milliseconds bootstrap_auth_timeout_from_environment() {
  return seconds_from_environment("CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S", std::chrono::seconds(5), 0.001, 3600,
                                  "the bootstrap root gives a new connection to send the secret");
}

BootstrapSettings settle(const BootstrapOptions& options) {
  return {options.timeout ? *options.timeout : bootstrap_timeout_from_environment(),
          options.auth_timeout ? *options.auth_timeout : bootstrap_auth_timeout_from_environment(), options.version,
          options.logger ? *options.logger : Logger::from_environment()};
}

std::string seconds_text(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return fmt::format("{} s", duration.count() / 1000);
  return fmt::format("{:g} s", static_cast<double>(duration.count()) / 1000);
}

}  // namespace canopy
