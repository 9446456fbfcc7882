// A file compiled into the library at build time (cmake/embed_files.cmake): shipped topologies, CUDA templates.
#pragma once

#include <string_view>

namespace canopy {

struct EmbeddedFile {
  std::string_view name;  // file name, e.g. "dgx1-v100.topo"
  std::string_view text;
};

}  // namespace canopy
