// docs/architecture.md against the tree: its folder map names every folder, its tables name every source unit, and
// every folder and unit it names still exists. Each failure names the file or the page's line, and the fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "tests/docs/architecture_doc.hpp"
#include "tests/docs/source_tree.hpp"
#include "tests/test_util.hpp"

namespace fs = std::filesystem;

namespace canopy::testing {
namespace {

const std::string kPage = "docs/architecture.md";

const std::string kGone = ": remove the row, or rename it to where the unit went";

std::string at_line(int line) { return kPage + ":" + std::to_string(line); }

std::string shown(const std::string& folder) { return folder.empty() ? "the top level" : "`" + folder + "`"; }

std::string table_head(const std::string& folder) {
  return folder.empty() ? "### The top level" : "### `" + folder + "`";
}

// The files a unit name stands for, for messages: "core/status.hpp and .cpp" or "core/version.cpp".
std::string unit_files(const std::string& folder, const std::string& unit) {
  return unit.find('.') == std::string::npos ? folder + unit + ".hpp and .cpp" : folder + unit;
}

// Why a name a table gives does not stand for a unit of `folder`, and the fix; "" when it does.
std::string name_problem(const fs::path& root, const std::string& folder, const std::string& name) {
  const fs::path dir = root / folder;
  const fs::path named = dir / name;
  const fs::path stem = named.stem();
  if (name.find('.') != std::string::npos) {
    if (!fs::is_regular_file(named)) return "no file " + folder + name + " exists" + kGone;
    const std::string ext = named.extension().string();
    const bool other_half = (ext == ".hpp" && fs::exists(dir / (stem.string() + ".cpp"))) ||
                            (ext == ".cpp" && fs::exists(dir / (stem.string() + ".hpp")));
    return other_half ? folder + stem.string() + ".hpp and .cpp are a pair: name them `" + stem.string() + "`" : "";
  }
  const bool hpp = fs::exists(dir / (name + ".hpp"));
  const bool cpp = fs::exists(dir / (name + ".cpp"));
  if (hpp && cpp) return "";
  if (hpp) return "only " + folder + name + ".hpp exists: name it `" + name + ".hpp`";
  if (cpp) return "only " + folder + name + ".cpp exists: name it `" + name + ".cpp`";
  if (fs::is_regular_file(named)) return "";  // a script or other file named as it is
  return "neither " + folder + name + ".hpp and .cpp nor a file " + folder + name + " exist" + kGone;
}

class ArchitectureDocTest : public ::testing::Test {
 protected:
  const fs::path root = source_dir();
  const ArchitectureDoc doc = read_architecture_doc(root / kPage);
};

TEST_F(ArchitectureDocTest, NamesEverySourceUnit) {
  ASSERT_FALSE(doc.unit_tables.empty()) << kPage << " has no \"## Source units, folder by folder\" tables";
  for (const auto& [folder, units] : source_units(root)) {
    const auto table = doc.unit_tables.find(folder);
    if (table == doc.unit_tables.end()) {
      ADD_FAILURE() << shown(folder) << " holds source units (" << unit_files(folder, units.front())
                    << ", ...) but " << kPage << " has no table for it: add the heading " << table_head(folder)
                    << " under \"## Source units, folder by folder\", with a row per unit, and a row in the "
                    << "folder map";
      continue;
    }
    std::set<std::string> named;
    if (const auto rows = doc.unit_rows.find(folder); rows != doc.unit_rows.end())
      for (const DocName& row : rows->second) named.insert(row.name);
    for (const std::string& unit : units) {
      if (named.contains(unit)) continue;
      ADD_FAILURE() << unit_files(folder, unit) << " is not named in " << kPage << ": add the row | `" << unit
                    << "` | its role, from the comment atop the file | to the table under " << table_head(folder)
                    << " (" << at_line(table->second) << ")";
    }
  }
}

TEST_F(ArchitectureDocTest, NamesNoFolderOrUnitThatIsGone) {
  for (const auto& [folder, line] : doc.unit_tables)
    if (!fs::is_directory(root / folder))
      ADD_FAILURE() << at_line(line) << " heads a table for " << shown(folder)
                    << ", which does not exist: remove the table, or rename it to where its units went";
  for (const auto& [folder, rows] : doc.unit_rows) {
    std::set<std::string> seen;
    for (const DocName& row : rows) {
      if (!seen.insert(row.name).second)
        ADD_FAILURE() << at_line(row.line) << " names `" << row.name << "` a second time in " << shown(folder)
                      << ": keep one row";
      if (!fs::is_directory(root / folder)) continue;
      if (const std::string problem = name_problem(root, folder, row.name); !problem.empty())
        ADD_FAILURE() << at_line(row.line) << " names `" << row.name << "` in " << shown(folder) << ", but "
                      << problem;
    }
  }
}

TEST_F(ArchitectureDocTest, MapsEveryFolder) {
  std::set<std::string> mapped;
  for (const DocName& row : doc.mapped_folders) {
    mapped.insert(row.name);
    if (!fs::is_directory(root / row.name))
      ADD_FAILURE() << at_line(row.line) << " maps `" << row.name
                    << "`, which does not exist: remove the row, or rename it";
  }
  for (const std::string& folder : tree_folders(root)) {
    if (folder.empty() || mapped.contains(folder)) continue;
    ADD_FAILURE() << "folder `" << folder << "` is not in " << kPage << "'s folder map: add the row | `" << folder
                  << "` | what lives there | under \"## Folder map\" (a build folder holds a CMakeCache.txt and "
                  << "is skipped)";
  }
}

}  // namespace
}  // namespace canopy::testing
