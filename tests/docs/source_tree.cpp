// tree_folders, source_units, includes_of (see source_tree.hpp): a walk of the file system under the source root.
#include "tests/docs/source_tree.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <set>
#include <string_view>

namespace fs = std::filesystem;

namespace canopy::testing {
namespace {

constexpr std::array<std::string_view, 6> kSourceExtensions = {".cpp", ".hpp", ".cuh", ".h", ".cc", ".in"};

bool is_source_file(const fs::path& path) {
  const std::string ext = path.extension().string();
  return std::find(kSourceExtensions.begin(), kSourceExtensions.end(), ext) != kSourceExtensions.end();
}

std::string relative_to(const fs::path& root, const fs::path& path) {
  return fs::relative(path, root).generic_string();
}

// The folder patterns of the root's .gitignore (lines ending in '/'): "/build*" anchored at the root, "__pycache__"
// anywhere. A developer's build, corpus and output folders are not part of the tree the page describes.
struct IgnoredFolders {
  std::vector<std::string> anchored, anywhere;

  explicit IgnoredFolders(const fs::path& root) {
    std::ifstream in(root / ".gitignore");
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line.front() == '#' || line.back() != '/') continue;
      line.pop_back();
      if (line.front() == '/') anchored.push_back(line.substr(1));
      else anywhere.push_back(line);
    }
  }

  bool contains(const std::string& rel, const std::string& name) const {
    const auto matches = [](const std::vector<std::string>& patterns, const std::string& text) {
      return std::any_of(patterns.begin(), patterns.end(),
                         [&](const std::string& pattern) { return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0; });
    };
    return matches(anchored, rel) || matches(anywhere, name);
  }
};

// The directories under `root` a walk enters: hidden ones (but those `keep_hidden` names), build folders, folders the
// .gitignore names and the folders `skip` names (relative to `root`) left out with everything under them.
std::vector<fs::path> walk_dirs(const fs::path& root, const std::set<std::string>& skip,
                                const std::set<std::string>& keep_hidden) {
  const IgnoredFolders ignored(root);
  std::vector<fs::path> dirs{root};
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    std::vector<fs::path> children;
    for (const fs::directory_entry& entry : fs::directory_iterator(dirs[i])) {
      if (!entry.is_directory() || entry.is_symlink()) continue;
      const std::string name = entry.path().filename().string();
      const std::string rel = relative_to(root, entry.path());
      if (name.starts_with('.') && !keep_hidden.contains(rel)) continue;
      if (skip.contains(rel) || ignored.contains(rel, name) || is_build_folder(entry.path())) continue;
      children.push_back(entry.path());
    }
    std::sort(children.begin(), children.end());
    dirs.insert(dirs.end(), children.begin(), children.end());
  }
  return dirs;
}

std::string folder_key(const fs::path& root, const fs::path& dir) {
  return dir == root ? std::string() : relative_to(root, dir) + "/";
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file()) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool starts_with_shebang(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char head[2] = {};
  in.read(head, 2);
  return in.gcount() == 2 && head[0] == '#' && head[1] == '!';
}

}  // namespace

bool is_build_folder(const fs::path& dir) { return fs::exists(dir / "CMakeCache.txt"); }

std::vector<std::string> tree_folders(const fs::path& root) {
  std::vector<std::string> folders;
  for (const fs::path& dir : walk_dirs(root, {"tests"}, {})) folders.push_back(folder_key(root, dir));
  std::sort(folders.begin(), folders.end());
  return folders;
}

std::map<std::string, std::vector<std::string>> source_units(const fs::path& root) {
  std::map<std::string, std::vector<std::string>> units;
  for (const fs::path& dir : walk_dirs(root, {"tests"}, {})) {
    std::set<std::string> names;
    const std::vector<std::string> files = files_in(dir);
    const std::set<std::string> present(files.begin(), files.end());
    for (const std::string& file : files) {
      if (!is_source_file(file)) continue;
      const fs::path path(file);
      const std::string stem = path.stem().string();
      const bool pair_half = (path.extension() == ".cpp" && present.contains(stem + ".hpp")) ||
                             (path.extension() == ".hpp" && present.contains(stem + ".cpp"));
      names.insert(pair_half ? stem : file);
    }
    if (!names.empty()) units[folder_key(root, dir)] = std::vector<std::string>(names.begin(), names.end());
  }
  return units;
}

std::vector<std::string> source_files(const fs::path& root) {
  std::vector<std::string> files;
  for (const fs::path& dir : walk_dirs(root, {"tests"}, {}))
    for (const std::string& file : files_in(dir))
      if (is_source_file(file)) files.push_back(relative_to(root, dir / file));
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> code_and_script_files(const fs::path& root) {
  std::vector<std::string> files;
  for (const fs::path& dir : walk_dirs(root, {"docs", "bench/results"}, {".ci"})) {
    for (const std::string& file : files_in(dir)) {
      const fs::path path = dir / file;
      const std::string ext = path.extension().string();
      if (is_source_file(path) || ext == ".cu" || ext == ".cmake" || ext == ".sh" || ext == ".py" ||
          file == "CMakeLists.txt" || starts_with_shebang(path))
        files.push_back(relative_to(root, path));
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<Include> includes_of(const fs::path& file) {
  std::vector<Include> includes;
  std::ifstream in(file);
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    std::string_view rest(text);
    rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
    if (!rest.starts_with('#')) continue;
    rest.remove_prefix(1);
    rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
    if (!rest.starts_with("include")) continue;
    rest.remove_prefix(7);
    rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
    if (rest.empty() || (rest.front() != '"' && rest.front() != '<')) continue;
    const char close = rest.front() == '"' ? '"' : '>';
    const std::size_t end = rest.find(close, 1);
    if (end == std::string_view::npos) continue;
    includes.push_back({line, std::string(rest.substr(1, end - 1)), close == '>'});
  }
  return includes;
}

}  // namespace canopy::testing
