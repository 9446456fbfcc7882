// docs/architecture.md as its test reads it: the folders its folder map names, and the source units each folder's
// table under "Source units, folder by folder" names (`### \`FOLDER/\`` heads a folder's table, `### The top level`
// the root's; a row's first cell is one backticked name).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace canopy::testing {

// A name the page gives, and the line of the page it stands on.
struct DocName {
  std::string name;
  int line = 0;
};

struct ArchitectureDoc {
  std::vector<DocName> mapped_folders;                       // the folder map's rows: "core/", "runtime/comm/", ...
  std::map<std::string, int> unit_tables;                    // folder ("core/"; "" the top level) -> its head's line
  std::map<std::string, std::vector<DocName>> unit_rows;     // folder -> the units its table names
};

ArchitectureDoc read_architecture_doc(const std::filesystem::path& page);

}  // namespace canopy::testing
