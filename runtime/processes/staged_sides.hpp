// staged_sides: which of one rank's buffers a multi-process call must run through the staging area (staging_area.hpp).
// Another process cannot reach a user buffer, so the buffers other ranks read or write are staged (copied in before
// the kernel, out after it); with CANOPY_STAGE_ONLY_SHARED the direct protocol's other buffers stay where the caller
// put them: its one-shot kernels write only their own rank's receive buffer, and read only the inputs the
// collective needs (docs/multi-process.md, "What is shared").
#pragma once

#include "runtime/comm/collective_spec.hpp"

namespace canopy {

struct StagedSides {
  bool send = true;  // other ranks read this rank's send buffer
  bool recv = true;  // other ranks write this rank's receive buffer
};

// The sides of rank `rank` in a call of `spec`: both for the planned trees (which move data through other ranks'
// buffers) and whenever `only_shared` is off; for the direct protocol with it on, those another rank touches:
// two-shot kernels read and write every rank's buffers; allgather pushes into the others' receive buffers (its own
// input is read locally); broadcast reads the root's input; reduce's root reads every other input; allreduce and
// reduce-scatter read every input.
StagedSides staged_sides(const CollectiveSpec& spec, int rank, bool only_shared);

}  // namespace canopy
