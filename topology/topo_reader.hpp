// The `.topo` reader: text in, a validated Topology out, or a canopy::Error listing every problem as
// `ORIGIN:LINE:COLUMN: error: MESSAGE` (the whole input is rejected). Grammar: ../docs/topology.md.
#pragma once

#include <filesystem>
#include <string_view>

#include "topology/topology.hpp"

namespace canopy {

// `origin` names the input in messages: a file path, or e.g. "<shipped dgx1-v100>".
Topology read_topo(std::string_view text, std::string_view origin);

// Reads a file; a missing, unreadable or oversized file is a canopy::Error naming the path.
Topology read_topo_file(const std::filesystem::path& path);

}  // namespace canopy
