// The compile-cache key (docs/jit-cache.md, Triton's habit): sha256 over everything that changes the binary.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "codegen/source_file.hpp"
#include "runtime/jit/nvrtc_compiler.hpp"

namespace canopy {

// The CANOPY_ environment variables that change generated code or its compilation; their values enter every
// key. None do yet: the list is the one place to add one.
const std::vector<std::string>& code_changing_variables();

// What enters every key besides the source, headers and options: the versions of the tools and the values of
// the code-changing variables. current_cache_key_fields() reads them; tests pass their own.
struct CacheKeyFields {
  std::string canopy_version;
  std::string nvrtc_version;
  std::vector<std::pair<std::string, std::string>> variables;  // name, value ("<unset>" when not set)
};
CacheKeyFields current_cache_key_fields();

// sha256 (hex) over the source's name and text, the headers (the template bundle's hash when they are the
// embedded templates), Canopy's version, NVRTC's version, the architecture, keep_ptx, the sorted options and
// the code-changing variables, each field tagged and length-prefixed.
std::string compile_cache_key(const SourceFile& source, const std::vector<SourceFile>& headers,
                              const CompileOptions& options, const CacheKeyFields& fields);
std::string compile_cache_key(const SourceFile& source, const std::vector<SourceFile>& headers,
                              const CompileOptions& options);  // with current_cache_key_fields()

}  // namespace canopy
