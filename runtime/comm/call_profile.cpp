// CallProfile's report (see call_profile.hpp).
#include "runtime/comm/call_profile.hpp"

#include <fmt/format.h>

namespace canopy {

std::string CallProfile::report() const {
  static constexpr const char* kNames[kPhases] = {"entry", "check", "choose", "launch", "api", "stage", "finish"};
  std::string out = fmt::format("{} calls ({} over {} µs left out: a first call compiles or loads), host µs per call:",
                                calls_, cold_, cold_ns / 1000);
  std::uint64_t total = 0;
  for (int p = 0; p < kPhases; ++p) {
    out += fmt::format(" {} {:.2f}", kNames[p], calls_ ? ns_[p] / 1000.0 / calls_ : 0.0);
    total += ns_[p];
  }
  return out + fmt::format(" = {:.2f}", calls_ ? total / 1000.0 / calls_ : 0.0);
}

}  // namespace canopy
