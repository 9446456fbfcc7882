// Exposes the embedded templates/*.cuh (written by cmake/embed_files.cmake) as SourceFiles, and their hash.
#include "codegen/template_bundle.hpp"

#include <cstddef>

#include "core/sha256.hpp"
#include "core/embedded_file.hpp"

namespace canopy {
namespace embedded {
extern const EmbeddedFile template_files[];
extern const std::size_t template_files_count;
}  // namespace embedded

const std::vector<SourceFile>& template_headers() {
  static const std::vector<SourceFile> headers = [] {
    std::vector<SourceFile> out;
    for (std::size_t i = 0; i < embedded::template_files_count; ++i) {
      const EmbeddedFile& f = embedded::template_files[i];
      out.push_back({"canopy/" + std::string(f.name), std::string(f.text)});
    }
    return out;
  }();
  return headers;
}

const std::string& template_bundle_hash() {
  static const std::string hash = [] {
    Sha256 h;
    for (const SourceFile& f : template_headers()) {
      h.update(f.name);
      h.update(std::string_view("\0", 1));
      h.update(f.text);
      h.update(std::string_view("\0", 1));
    }
    return h.hex_digest();
  }();
  return hash;
}

}  // namespace canopy
