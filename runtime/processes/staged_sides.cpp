// Which buffers of a multi-process call are staged (staged_sides.hpp).
#include "runtime/processes/staged_sides.hpp"

namespace canopy {

StagedSides staged_sides(const CollectiveSpec& spec, int rank, bool only_shared) {
  if (!only_shared || !spec.direct || spec.two_shot) return {};
  switch (spec.collective) {
    case Collective::allgather: return {false, true};
    case Collective::broadcast: return {rank == spec.root, false};
    case Collective::reduce: return {rank != spec.root, false};
    case Collective::allreduce:
    case Collective::reducescatter: return {true, false};
  }
  return {};
}

}  // namespace canopy
