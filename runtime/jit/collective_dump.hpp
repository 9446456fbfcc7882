// dump_collective: with CANOPY_DUMP_DIR set, writes every stage of a prepared collective there (Triton's and
// Halide's dumps, NCCL's NCCL_GRAPH_DUMP_FILE): NAME.plan.json, NAME.schedule.txt, NAME.cu and NAME.manifest.json.
// Unset: nothing. A folder that cannot be written is reported on stderr once, never fatal.
#pragma once

#include "runtime/jit/build.hpp"

namespace canopy {

void dump_collective(const BuiltCollective& built);

}  // namespace canopy
