// read_architecture_doc (see architecture_doc.hpp): the folder map's rows and the source-unit tables of the page.
#include "tests/docs/architecture_doc.hpp"

#include <fstream>
#include <optional>
#include <string_view>

namespace canopy::testing {
namespace {

constexpr std::string_view kFolderMap = "## Folder map";
constexpr std::string_view kUnits = "## Source units, folder by folder";
constexpr std::string_view kTopLevel = "### The top level";

// The first cell of a table row ("| a | b |" -> " a "), or nothing when the line is not a row.
std::optional<std::string_view> first_cell(std::string_view line) {
  if (!line.starts_with('|')) return std::nullopt;
  const std::size_t end = line.find('|', 1);
  if (end == std::string_view::npos) return std::nullopt;
  return line.substr(1, end - 1);
}

// The first backticked token of a text, or nothing.
std::optional<std::string> backticked(std::string_view text) {
  const std::size_t open = text.find('`');
  if (open == std::string_view::npos) return std::nullopt;
  const std::size_t close = text.find('`', open + 1);
  if (close == std::string_view::npos) return std::nullopt;
  return std::string(text.substr(open + 1, close - open - 1));
}

}  // namespace

ArchitectureDoc read_architecture_doc(const std::filesystem::path& page) {
  ArchitectureDoc doc;
  std::ifstream in(page);
  std::string text;
  std::string section;                 // the "## " heading we are under
  std::optional<std::string> folder;   // the unit table we are in
  for (int line = 1; std::getline(in, text); ++line) {
    const std::string_view row(text);
    if (row.starts_with("## ")) {
      section = text;
      folder.reset();
      continue;
    }
    if (section == kUnits && row.starts_with("### ")) {
      folder.reset();
      if (row == kTopLevel) {
        folder = "";
      } else if (std::optional<std::string> name = backticked(row); name && name->ends_with('/')) {
        folder = *name;
      }
      if (folder) doc.unit_tables[*folder] = line;
      continue;
    }
    const std::optional<std::string_view> cell = first_cell(row);
    if (!cell) continue;
    const std::optional<std::string> name = backticked(*cell);
    if (!name) continue;
    if (section == kFolderMap && name->ends_with('/')) doc.mapped_folders.push_back({*name, line});
    if (section == kUnits && folder) doc.unit_rows[*folder].push_back({*name, line});
  }
  return doc;
}

}  // namespace canopy::testing
