// KernelSource: what the emitter produces for one schedule: one CUDA translation unit with one kernel entry,
// compiled once and launched on every GPU as `entry(args, device)` (ptxas compiles a kernel's whole call graph
// once per entry, so one entry keeps compile time independent of the GPU count), and what the runtime needs to
// launch it (grid and block per device, memory per rank).
#pragma once

#include <string>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "codegen/schedule.hpp"
#include "codegen/source_file.hpp"

namespace canopy {

// One device's launch of the entry: `entry<<<blocks, threads>>>(args, device)`.
struct DeviceLaunch {
  int device = 0;
  std::vector<int> ranks;  // ranks this device runs, ascending
  int blocks = 0;          // grid size: launch exactly this many blocks ...
  int threads = 0;         // ... of this many threads, all co-resident (blocks spin on each other)
};

struct KernelSource {
  std::string name;  // procedural base name, e.g. canopy_allreduce_dgx1v100_t32_c256k_f32_sum
  SourceFile file;   // name + ".cu" and its (formatted) text
  std::string entry; // extern "C" symbol (the base name)
  int ranks = 0;
  std::vector<DeviceLaunch> launches;    // one per device, in device order
  std::vector<RankResources> resources;  // per rank
  std::string schedule_key;              // sha256 of the plan JSON and the codegen options
};

}  // namespace canopy
