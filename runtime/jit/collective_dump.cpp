// dump_collective (see collective_dump.hpp).
#include "runtime/jit/collective_dump.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "codegen/generate.hpp"
#include "planner/plan_json.hpp"

namespace canopy {

void dump_collective(const BuiltCollective& b) {
  const char* dir = std::getenv("CANOPY_DUMP_DIR");
  if (!dir || !*dir) return;
  const std::filesystem::path folder(dir);
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  const std::string& name = b.source.name;
  const std::pair<std::string, std::string> files[] = {
      {name + ".plan.json", plan_to_json(b.plan)},
      {name + ".schedule.txt", b.schedule.dump()},
      {b.source.file.name, b.source.file.text},
      {name + ".manifest.json", manifest_json(b.source, b.schedule)},
  };
  for (const auto& [file, text] : files) {
    if (b.schedule.program && file.ends_with(".plan.json")) continue;  // a program has no plan to show
    std::ofstream out(folder / file, std::ios::binary);
    if (!(out << text)) {
      static bool warned = false;
      if (!warned) std::fprintf(stderr, "canopy: warning: CANOPY_DUMP_DIR='%s': cannot write %s\n", dir, file.c_str());
      warned = true;
      return;
    }
  }
}

}  // namespace canopy
