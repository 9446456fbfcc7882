// shipped_topologies / load_topology: look-up over the embedded topologies/ bundle, then the file system.
#include "topology/shipped_topologies.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/embedded_file.hpp"
#include "core/error.hpp"
#include "topology/topo_reader.hpp"

namespace canopy {

namespace embedded {
extern const EmbeddedFile topology_files[];
extern const std::size_t topology_files_count;
}  // namespace embedded

namespace {

std::string_view first_comment(std::string_view text) {
  const std::size_t hash = text.find('#');
  if (hash == std::string_view::npos) return {};
  std::string_view line = text.substr(hash + 1, text.find('\n', hash) - hash - 1);
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  return line;
}

}  // namespace

std::vector<ShippedTopology> shipped_topologies() {
  std::vector<ShippedTopology> out;
  for (std::size_t i = 0; i < embedded::topology_files_count; ++i) {
    const EmbeddedFile& f = embedded::topology_files[i];
    std::string_view name = f.name;
    if (name.ends_with(".topo")) name.remove_suffix(5);
    out.push_back({name, first_comment(f.text), f.text});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

Topology load_topology(std::string_view name_or_path) {
  const std::filesystem::path path{std::string(name_or_path)};
  std::error_code ec;
  const bool looks_like_path = name_or_path.find('/') != std::string_view::npos || name_or_path.ends_with(".topo");
  if (looks_like_path || std::filesystem::exists(path, ec)) return read_topo_file(path);
  std::string names;
  for (const auto& s : shipped_topologies()) {
    if (s.name == name_or_path) return read_topo(s.text, fmt::format("topologies/{}.topo", s.name));
    names += (names.empty() ? "" : ", ") + std::string(s.name);
  }
  throw Error(fmt::format("unknown topology '{}': no such file, and no shipped topology has that name "
                          "(shipped: {}; `canopy topo list` describes them)",
                          name_or_path, names));
}

}  // namespace canopy
