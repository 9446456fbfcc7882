// The codegen pipeline (lower, emit, format) and the manifest that describes its output.
#include "codegen/generate.hpp"

#include <nlohmann/json.hpp>

#include "codegen/emit_cuda.hpp"
#include "codegen/lower.hpp"
#include "codegen/lower_program.hpp"
#include "codegen/template_bundle.hpp"
#include "core/version.hpp"
#if CANOPY_WITH_CLANG
#include "codegen/source_format.hpp"
#endif


namespace canopy {

KernelSource generate(const Plan& plan, const CodegenOptions& options, Schedule* schedule) {
  return generate(lower(plan, options), schedule);
}

KernelSource generate(const algo::Program& program, const Topology& topology, const CodegenOptions& options,
                      Schedule* schedule) {
  return generate(lower_program(program, options, topology), schedule);
}

KernelSource generate(Schedule lowered, Schedule* schedule) {
  KernelSource source = emit_cuda(lowered);
#if CANOPY_WITH_CLANG
  source.file.text = format_cuda_source(source.file.text);
#endif
  if (schedule) *schedule = std::move(lowered);
  return source;
}

std::string manifest_json(const KernelSource& k, const Schedule& s) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["name"] = k.name;
  j["source"] = k.file.name;
  if (!s.program) j["plan"] = "plan.json";
  if (s.program) {
    j["algorithm"] = s.program->name;
    j["goal"] = s.program->goal;
    j["chunks"] = s.program->chunks;
  } else {
    j["collective"] = to_string(s.plan.collective);
  }
  j["topology"] = s.plan.topology;
  j["ranks"] = s.plan.ranks;
  j["dtype"] = to_string(s.options.dtype);
  j["op"] = to_string(s.options.op);
  j["chunk_bytes"] = s.options.chunk_bytes;
  j["fifo_depth"] = s.options.fifo_depth;
  j["threads_per_block"] = s.options.threads_per_block;
  j["device_of_rank"] = s.options.device_of_rank;
  ordered_json entries = ordered_json::array();
  for (const DeviceLaunch& l : k.launches)
    entries.push_back({{"device", l.device}, {"ranks", l.ranks}, {"blocks", l.blocks}, {"threads", l.threads}});
  j["entry"] = k.entry;
  j["launches"] = entries;
  ordered_json memory = ordered_json::array();
  for (int r = 0; r < s.ranks; ++r)
    memory.push_back({{"rank", s.plan.ranks[r]},
                      {"scratch_bytes", k.resources[r].scratch_bytes},
                      {"flags", k.resources[r].flag_count},
                      {"flag_bytes", k.resources[r].flag_count * 128}});
  j["memory_per_rank"] = memory;
  if (!s.relays.empty()) {  // participants after the ranks: other GPUs forwarding (Blink+), FIFOs only
    ordered_json relays = ordered_json::array();
    for (int r = s.ranks; r < s.participants(); ++r)
      relays.push_back({{"relay", s.name_of(r)},
                        {"gpu", s.relays[r - s.ranks].gpu},
                        {"device", s.device_of(r)},
                        {"scratch_bytes", k.resources[r].scratch_bytes},
                        {"flags", k.resources[r].flag_count},
                        {"flag_bytes", k.resources[r].flag_count * 128}});
    j["relays"] = relays;
  }
  j["schedule_key"] = k.schedule_key;
  j["template_bundle_sha256"] = template_bundle_hash();
  j["canopy_version"] = CANOPY_VERSION;
  return j.dump(2) + "\n";
}

}  // namespace canopy
