// The CUDA building blocks of templates/*.cuh, embedded in the library at build time. Generated sources include
// them as "canopy/<file>.cuh"; NVRTC and the Clang check get them as in-memory headers.
#pragma once

#include <string>
#include <vector>

#include "codegen/source_file.hpp"

namespace canopy {

// Every embedded template, named "canopy/<file name>", in file-name order.
const std::vector<SourceFile>& template_headers();

// sha256 (hex) over every template's name and text: part of every compile-cache key.
const std::string& template_bundle_hash();

}  // namespace canopy
