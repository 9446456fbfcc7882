// CallPath (call_path.hpp): what every way of running checks alike.
#include "runtime/comm/call_path.hpp"

#include <fmt/format.h>

namespace canopy {

Status CallPath::check_own_rank(const char* what, int rank, int first, int own) {
  if (rank >= first && rank < first + own) return Status();
  return Status(StatusCode::invalid_argument, fmt::format("{}: rank {} is not one of this process's ranks ({}..{})",
                                                          what, rank, first, first + own - 1));
}

}  // namespace canopy
