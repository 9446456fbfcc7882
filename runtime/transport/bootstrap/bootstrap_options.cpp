// BootstrapOptions' defaults from the environment (see bootstrap_options.hpp).
#include "runtime/transport/bootstrap/bootstrap_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "core/error.hpp"

namespace canopy {

std::chrono::milliseconds bootstrap_timeout_from_environment() {
  const char* value = std::getenv("CANOPY_BOOTSTRAP_TIMEOUT_S");
  if (!value || !*value) return std::chrono::seconds(120);
  const std::string_view v(value);
  double seconds = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
  if (ec != std::errc() || end != v.data() + v.size() || !(seconds >= 0.001 && seconds <= 1e6))
    throw Error(fmt::format("CANOPY_BOOTSTRAP_TIMEOUT_S='{}': expected the seconds ranks wait for each other while "
                            "they bootstrap, 0.001 to 1000000, e.g. 120 (the default) or 0.5",
                            v));
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000 + 0.5));
}

BootstrapSettings settle(const BootstrapOptions& options) {
  return {options.timeout ? *options.timeout : bootstrap_timeout_from_environment(), options.version,
          options.logger ? *options.logger : Logger::from_environment()};
}

std::string seconds_text(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return fmt::format("{} s", duration.count() / 1000);
  return fmt::format("{:g} s", static_cast<double>(duration.count()) / 1000);
}

}  // namespace canopy
