// Formats internal-assertion failures so they read as Canopy bugs, not user mistakes.
#include "core/error.hpp"

#include <fmt/format.h>

namespace canopy {

void throw_internal_error(const char* condition, const char* file, int line, const std::string& detail) {
  throw InternalError(fmt::format("internal error at {}:{}: '{}' failed: {} (this is a bug in Canopy; please report it)",
                                  file, line, condition, detail));
}

}  // namespace canopy
