// libFuzzer target for plan JSON: any bytes must give a Plan or a canopy::Error, never a crash, hang or sanitizer
// report; an accepted plan must survive write -> read unchanged, be checkable against a topology, and lower and
// emit (codegen) or be refused with a canopy::Error (CANOPY_PLAN_FILE hands user plans to codegen).
#include <cstdint>
#include <string_view>

#include "codegen/emit_cuda.hpp"
#include "codegen/lower.hpp"
#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/plan_eval.hpp"
#include "planner/plan_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const canopy::Topology topology = canopy::load_topology("dgx1-v100");
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const canopy::Plan plan = canopy::plan_from_json(text, "fuzz.json");
    if (!(canopy::plan_from_json(canopy::plan_to_json(plan), "written.json") == plan)) __builtin_trap();
    (void)canopy::check_plan(topology, plan);
    canopy::CodegenOptions options;
    options.blocks_per_rank = 2;
    const canopy::KernelSource source = canopy::emit_cuda(canopy::lower(plan, options));
    if (source.file.text.empty()) __builtin_trap();
  } catch (const canopy::Error&) {
    // rejected input: fine
  }
  return 0;
}
