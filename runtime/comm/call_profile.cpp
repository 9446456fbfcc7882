// CallProfile's report and its switch (see call_profile.hpp).
#include "runtime/comm/call_profile.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#include "core/error.hpp"

namespace canopy {

std::string CallProfile::report() const {
  static constexpr const char* kNames[kPhases] = {"entry", "check", "choose", "launch", "stage", "finish"};
  std::string out = fmt::format("{} calls, host µs per call:", calls_);
  std::uint64_t total = 0;
  for (int p = 0; p < kPhases; ++p) {
    out += fmt::format(" {} {:.2f}", kNames[p], calls_ ? ns_[p] / 1000.0 / calls_ : 0.0);
    total += ns_[p];
  }
  return out + fmt::format(" = {:.2f}", calls_ ? total / 1000.0 / calls_ : 0.0);
}

bool profile_calls_from_environment() {
  const char* v = std::getenv("CANOPY_PROFILE_CALLS");
  if (!v || !*v || std::string_view(v) == "0") return false;
  if (std::string_view(v) == "1") return true;
  throw Error(fmt::format("CANOPY_PROFILE_CALLS='{}': expected 0 or 1", v));
}

}  // namespace canopy
