// library_version(): the CANOPY_VERSION this library was built as (core/version.hpp.in says why both exist).
#include "core/version.hpp"

namespace canopy {

const char* library_version() { return CANOPY_VERSION; }

}  // namespace canopy
