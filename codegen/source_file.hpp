// SourceFile: a named piece of source text held in memory (an embedded CUDA template header, a generated
// translation unit). NVRTC and the Clang parse check receive headers this way, never from disk.
#pragma once

#include <string>

namespace canopy {

struct SourceFile {
  std::string name;  // the name `#include` uses, e.g. "canopy/flags.cuh"
  std::string text;
  friend bool operator==(const SourceFile&, const SourceFile&) = default;
};

}  // namespace canopy
