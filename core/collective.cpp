// Names and bus-bandwidth factors of the collectives.
#include "core/collective.hpp"

namespace canopy {

std::string to_string(Collective c) {
  switch (c) {
    case Collective::broadcast: return "broadcast";
    case Collective::reduce: return "reduce";
    case Collective::allreduce: return "allreduce";
    case Collective::allgather: return "allgather";
    case Collective::reducescatter: return "reducescatter";
  }
  return "?";
}

std::optional<Collective> parse_collective(std::string_view name) {
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                       Collective::reducescatter})
    if (name == to_string(c)) return c;
  if (name == "reduce-scatter" || name == "reduce_scatter") return Collective::reducescatter;
  return std::nullopt;
}

double busbw_factor(Collective c, int n) {
  if (n <= 1) return c == Collective::broadcast || c == Collective::reduce ? 1.0 : 0.0;
  switch (c) {
    case Collective::allreduce: return 2.0 * (n - 1) / n;
    case Collective::allgather:
    case Collective::reducescatter: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

bool has_root(Collective c) { return c == Collective::broadcast || c == Collective::reduce; }

bool reduces(Collective c) {
  return c == Collective::reduce || c == Collective::allreduce || c == Collective::reducescatter;
}

}  // namespace canopy
