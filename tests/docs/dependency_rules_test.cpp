// The rules of docs/architecture.md's "Dependencies point one way", checked on the tree: which folder may include
// which, no CUDA or NVRTC header below runtime/, no files loose in runtime/, the communicator's layers above the other
// runtime/ folders, and no source file pointing outside the repository. Each failure names the file and line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/docs/source_tree.hpp"
#include "tests/test_util.hpp"

namespace fs = std::filesystem;

namespace canopy::testing {
namespace {

const std::string kRules = "docs/architecture.md, \"Dependencies point one way\"";

// The include prefixes a folder's files may use; a quoted include without '/' may name a file beside the includer.
struct FolderRule {
  std::string folder;
  std::vector<std::string> may_include;
};

std::vector<std::string> up_to_runtime(std::vector<std::string> more) {
  std::vector<std::string> prefixes = {"core/",    "topology/", "dsl/",      "planner/",
                                       "simulator/", "codegen/", "runtime/", "templates/", "canopy/"};
  prefixes.insert(prefixes.end(), more.begin(), more.end());
  return prefixes;
}

// nccl/'s folders from base/ up to and including `top` (comm/, real/, init/, group/ in that order).
std::vector<std::string> nccl_up_to(const std::string& top) {
  std::vector<std::string> folders = {"nccl/base/", "nccl/premul/", "nccl/diagnostics/", "nccl/config/",
                                      "nccl/p2p/"};
  for (const char* next : {"nccl/comm/", "nccl/real/", "nccl/init/", "nccl/group/"}) {
    folders.push_back(next);
    if (top == next) break;
  }
  return folders;
}

// The layers, left to right: core <- topology <- dsl <- planner <- (simulator) <- codegen <- runtime <- bench/harness
// <- tools, bench programs; codegen/ does not include simulator/.
const std::vector<FolderRule>& folder_rules() {
  static const std::vector<FolderRule> rules = {
      {"core/", {"core/"}},
      {"topology/", {"core/", "topology/"}},
      {"dsl/", {"core/", "topology/", "dsl/"}},
      {"planner/", {"core/", "topology/", "dsl/", "planner/"}},
      {"simulator/", {"core/", "topology/", "dsl/", "planner/", "simulator/"}},
      {"codegen/", {"core/", "topology/", "dsl/", "planner/", "codegen/"}},  // the simulator is no stage of a kernel
      {"templates/", {"canopy/"}},  // the templates include each other as generated code does
      {"runtime/", up_to_runtime({})},
      {"nccl/", up_to_runtime({"nccl/"})},
      // nccl/'s subfolders, one way: base <- premul, diagnostics, config, p2p <- comm <- real <- init <- group <- api.
      {"nccl/base/", up_to_runtime({"nccl/base/"})},
      {"nccl/premul/", up_to_runtime({"nccl/base/", "nccl/premul/"})},
      {"nccl/diagnostics/", up_to_runtime({"nccl/base/", "nccl/diagnostics/"})},
      {"nccl/config/", up_to_runtime({"nccl/base/", "nccl/config/"})},
      {"nccl/p2p/", up_to_runtime({"nccl/base/", "nccl/p2p/"})},
      {"nccl/comm/", up_to_runtime(nccl_up_to("nccl/comm/"))},
      {"nccl/real/", up_to_runtime(nccl_up_to("nccl/real/"))},
      {"nccl/init/", up_to_runtime(nccl_up_to("nccl/init/"))},
      {"nccl/group/", up_to_runtime(nccl_up_to("nccl/group/"))},
      {"nccl/api/", up_to_runtime({"nccl/"})},
      {"bench/harness/", up_to_runtime({"bench/harness/"})},
      {"bench/", up_to_runtime({"bench/", "tools/usage/"})},
      {"tools/usage/", {"tools/usage/"}},  // CLI11 alone
      {"tools/", up_to_runtime({"bench/harness/", "tools/"})},
      {"examples/", {"canopy.hpp"}},  // the public API alone, as users include it
  };
  return rules;
}

// The rule of the deepest folder that holds `file`, or null.
const FolderRule* rule_for(const std::string& file) {
  const FolderRule* best = nullptr;
  for (const FolderRule& rule : folder_rules())
    if (file.starts_with(rule.folder) && (!best || rule.folder.size() > best->folder.size())) best = &rule;
  return best;
}

bool allowed(const FolderRule& rule, const fs::path& includer, const std::string& target) {
  if (target.find('/') == std::string::npos && fs::exists(includer.parent_path() / target)) return true;
  return std::any_of(rule.may_include.begin(), rule.may_include.end(),
                     [&](const std::string& prefix) { return target.starts_with(prefix); });
}

std::string where(const std::string& file, int line) { return file + ":" + std::to_string(line); }

class DependencyRulesTest : public ::testing::Test {
 protected:
  const fs::path root = source_dir();
  const std::vector<std::string> files = source_files(root);
};

TEST_F(DependencyRulesTest, EveryFolderIncludesOnlyTheFoldersToItsLeft) {
  for (const std::string& file : files) {
    const FolderRule* rule = rule_for(file);
    if (!rule) continue;
    for (const Include& include : includes_of(root / file)) {
      if (include.angled || allowed(*rule, root / file, include.target)) continue;
      std::string may;
      for (const std::string& prefix : rule->may_include) may += (may.empty() ? "" : ", ") + prefix;
      ADD_FAILURE() << where(file, include.line) << " includes \"" << include.target << "\", but " << rule->folder
                    << " may include only " << may << " (" << kRules
                    << "): move the code it needs down a layer, or this file up";
    }
  }
}

TEST_F(DependencyRulesTest, NoCudaOrNvrtcHeaderBelowRuntime) {
  for (const std::string& file : files) {
    if (!(file.starts_with("core/") || file.starts_with("topology/") || file.starts_with("dsl/") ||
          file.starts_with("planner/") || file.starts_with("simulator/") || file.starts_with("codegen/")))
      continue;
    for (const Include& include : includes_of(root / file))
      if (include.angled && (include.target.starts_with("cuda") || include.target.starts_with("nvrtc")))
        ADD_FAILURE() << where(file, include.line) << " includes <" << include.target
                      << ">: no CUDA or NVRTC header below runtime/, so these folders build and test on any CPU ("
                      << kRules << "); move the CUDA part into runtime/";
  }
}

TEST_F(DependencyRulesTest, RuntimeHasNoFilesOutsideItsSubfolders) {
  for (const fs::directory_entry& entry : fs::directory_iterator(root / "runtime"))
    if (!entry.is_directory())
      ADD_FAILURE() << "runtime/" << entry.path().filename().string()
                    << " lies in runtime/ itself: every runtime file belongs to the subfolder of its concept ("
                    << kRules << ")";
}

// The communicator's layers inside runtime/, bottom to top: comm/ (the handle, CallPath, what every way of running
// shares); local/ and hosts/ over comm/; processes/ over local/; factory/ over all. Each may include only the layers
// below it; the other runtime/ folders include none of them.
const std::map<std::string, std::set<std::string>>& communicator_layers_below() {
  static const std::map<std::string, std::set<std::string>> below = {
      {"comm", {}},
      {"local", {"comm"}},
      {"hosts", {"comm"}},
      {"processes", {"comm", "local"}},
      {"factory", {"comm", "local", "processes", "hosts"}},
  };
  return below;
}

// runtime/<name>/... as <name>, or "" outside runtime/.
std::string runtime_folder(const std::string& path) {
  if (!path.starts_with("runtime/")) return "";
  const std::size_t slash = path.find('/', 8);
  return slash == std::string::npos ? "" : path.substr(8, slash - 8);
}

TEST_F(DependencyRulesTest, TheCommunicatorsLayersIncludeOnlyTheLayersBelow) {
  const auto& below = communicator_layers_below();
  for (const std::string& file : files) {
    const std::string from = runtime_folder(file);
    if (from.empty()) continue;
    for (const Include& include : includes_of(root / file)) {
      const std::string to = runtime_folder(include.target);
      if (include.angled || to.empty() || to == from || !below.contains(to)) continue;
      if (below.contains(from) && below.at(from).contains(to)) continue;
      ADD_FAILURE() << where(file, include.line) << " includes \"" << include.target << "\": runtime/" << to
                    << "/ is a layer of the communicator, which "
                    << (below.contains(from) ? "runtime/" + from + "/ stands below"
                                             : "the other runtime/ folders never include")
                    << " (" << kRules
                    << "): pass what it needs through CallPath or an interface of a lower folder";
    }
  }
}

// No two folders include each other, at any depth (a file's folder is the directory it lies in).
TEST_F(DependencyRulesTest, NoTwoFoldersIncludeEachOther) {
  std::set<std::pair<std::string, std::string>> edges;
  std::map<std::pair<std::string, std::string>, std::string> site;
  for (const std::string& file : files) {
    const std::string from = fs::path(file).parent_path().string();
    for (const Include& include : includes_of(root / file)) {
      if (include.angled || include.target.find('/') == std::string::npos) continue;
      const std::string to = fs::path(include.target).parent_path().string();
      if (to == from) continue;
      edges.insert({from, to});
      site.emplace(std::pair{from, to}, where(file, include.line));
    }
  }
  for (const auto& [from, to] : edges) {
    if (from > to || !edges.contains({to, from})) continue;
    ADD_FAILURE() << from << "/ and " << to << "/ include each other (" << site.at({from, to}) << " and "
                  << site.at({to, from}) << "; " << kRules
                  << "): move what both need into one of them, or below both";
  }
}

TEST_F(DependencyRulesTest, NoSourceFilePointsOutsideTheRepository) {
  // Spelled in pieces so that this file does not point there itself.
  const std::vector<std::string> outside = {std::string("DESIGN") + ".md", std::string("..") + "/shared/"};
  for (const std::string& file : code_and_script_files(root)) {
    std::ifstream in(root / file);
    std::string text;
    for (int line = 1; std::getline(in, text); ++line)
      for (const std::string& needle : outside)
        if (text.find(needle) != std::string::npos)
          ADD_FAILURE() << where(file, line) << " points to " << needle
                        << ", which is outside the repository: point to the page of docs/ that holds it";
  }
}

}  // namespace
}  // namespace canopy::testing
