// render_svg: runs Graphviz's `dot` on DOT text to write an SVG file, with clear errors when it is missing or fails.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "tools/commands.hpp"

extern char** environ;

namespace canopy::cli {

void render_svg(const std::string& dot, const std::string& svg_path) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string dot_path = (dir / fmt::format("canopy-{}.dot", ::getpid())).string();
  {
    std::ofstream out(dot_path);
    out << dot;
    if (!out.flush()) throw Error(fmt::format("cannot write a temporary file in {}", dir.string()));
  }
  const std::string tmp_svg = svg_path + ".tmp";
  std::vector<std::string> words{"dot", "-Tsvg", dot_path, "-o", tmp_svg};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ);
  int status = 0;
  if (spawned == 0) waitpid(pid, &status, 0);
  std::filesystem::remove(dot_path);
  if (spawned != 0)
    throw Error("--svg needs Graphviz's `dot` on PATH (apt-get install graphviz), or write DOT with -o and render it "
                "elsewhere");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::filesystem::remove(tmp_svg);
    throw Error(fmt::format("Graphviz `dot` failed to render '{}' (see its message above)", svg_path));
  }
  std::error_code ec;
  std::filesystem::rename(tmp_svg, svg_path, ec);
  if (ec) throw Error(fmt::format("cannot write '{}': {}", svg_path, ec.message()));
}

}  // namespace canopy::cli
