// KernelSource: what the emitter produces for one schedule: one CUDA translation unit per device (so each GPU, or
// each process, compiles only its own kernel, and the units compile in parallel), and what the runtime needs to
// launch them (grid, block, memory per rank).
#pragma once

#include <string>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "codegen/schedule.hpp"
#include "codegen/source_file.hpp"

namespace canopy {

struct KernelUnit {
  SourceFile file;   // <entry>.cu and its (formatted) text
  std::string entry;  // extern "C" symbol, e.g. canopy_allreduce_dgx1v100_t32_c256k_f32_sum_dev0
  int device = 0;
  std::vector<int> ranks;  // ranks this entry runs, ascending
  int blocks = 0;          // grid size: launch exactly this many blocks ...
  int threads = 0;         // ... of this many threads, all co-resident (blocks spin on each other)
};

struct KernelSource {
  std::string name;  // procedural base name, e.g. canopy_allreduce_dgx1v100_t32_c256k_f32_sum
  int ranks = 0;
  std::vector<KernelUnit> units;         // one per device, in device order
  std::vector<RankResources> resources;  // per rank
  std::string schedule_key;              // sha256 of the plan JSON and the codegen options
};

}  // namespace canopy
