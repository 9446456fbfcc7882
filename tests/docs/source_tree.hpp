// The source tree as docs/architecture.md describes it, read from the file system (no git needed): its folders, the
// source units in each (a .hpp/.cpp pair is one unit, named without extension; any other source file is named with
// its extension) and the includes of every file. Skipped: tests/, hidden folders, build folders (a CMakeCache.txt)
// and the folders the root's .gitignore names.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace canopy::testing {

// Every folder of the tree outside tests/, relative to `root` with a trailing '/' ("" for the root itself), sorted.
std::vector<std::string> tree_folders(const std::filesystem::path& root);

// Per folder of tree_folders that holds source files (.cpp, .hpp, .cuh, .h, .cc, .in): its units, sorted.
std::map<std::string, std::vector<std::string>> source_units(const std::filesystem::path& root);

// Every source file (as source_units counts them) outside tests/, relative to `root`, sorted.
std::vector<std::string> source_files(const std::filesystem::path& root);

// Every file outside hidden folders (but .ci/), build folders, docs/ and bench/results/ that is code or a script: the
// source files above, tests/ included, .cu, .cmake, .sh and .py files, CMakeLists.txt, and any file starting "#!".
std::vector<std::string> code_and_script_files(const std::filesystem::path& root);

// One #include line of a file.
struct Include {
  int line = 0;
  std::string target;  // what stands between the quotes or the angle brackets
  bool angled = false;  // <...> rather than "..."
};
std::vector<Include> includes_of(const std::filesystem::path& file);

// Whether a directory is a CMake build folder, which the tree leaves out.
bool is_build_folder(const std::filesystem::path& dir);

}  // namespace canopy::testing
