// read_input_file and base_new_pairs: a tool's input files, read whole or paired, with errors that name them
// (commands.hpp).
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

std::string read_input_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read '{}': give the path of {}", path, what));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::pair<std::string, std::string>> base_new_pairs(
    const std::vector<std::string>& given, const std::vector<std::pair<std::string, std::string>>& more,
    const char* noun, const char* files) {
  if (given.size() == 1)
    throw Error(fmt::format("one {} given ('{}'): give {}, the two runs to compare", noun, given[0], files));
  std::vector<std::pair<std::string, std::string>> pairs;
  if (given.size() == 2) pairs.emplace_back(given[0], given[1]);
  pairs.insert(pairs.end(), more.begin(), more.end());
  return pairs;
}

}  // namespace canopy::cli
