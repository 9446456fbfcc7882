// compile_cache_key: see cache_key.hpp.
#include "runtime/jit/cache_key.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "core/sha256.hpp"
#include "core/version.hpp"
#include "codegen/template_bundle.hpp"

namespace canopy {

const std::vector<std::string>& code_changing_variables() {
  static const std::vector<std::string> names = {};
  return names;
}

CacheKeyFields current_cache_key_fields() {
  CacheKeyFields f{CANOPY_VERSION, nvrtc_version(), {}};
  for (const std::string& v : code_changing_variables()) {
    const char* value = std::getenv(v.c_str());
    f.variables.emplace_back(v, value ? value : "<unset>");
  }
  return f;
}

std::string compile_cache_key(const SourceFile& source, const std::vector<SourceFile>& headers,
                              const CompileOptions& options) {
  return compile_cache_key(source, headers, options, current_cache_key_fields());
}

std::string compile_cache_key(const SourceFile& source, const std::vector<SourceFile>& headers,
                              const CompileOptions& options, const CacheKeyFields& fields) {
  Sha256 h;
  auto field = [&](std::string_view tag, std::string_view value) {
    h.update(fmt::format("{}:{}:", tag, value.size()));
    h.update(value);
  };
  field("source-name", source.name);
  field("source", source.text);
  if (headers == template_headers()) {
    field("templates", template_bundle_hash());
  } else {
    for (const SourceFile& f : headers) {
      field("header-name", f.name);
      field("header", f.text);
    }
  }
  field("canopy", fields.canopy_version);
  field("nvrtc", fields.nvrtc_version);
  field("arch", options.arch);
  field("keep-ptx", options.keep_ptx ? "1" : "0");
  std::vector<std::string> sorted = options.extra_options;
  std::sort(sorted.begin(), sorted.end());
  for (const std::string& o : sorted) field("option", o);
  for (const auto& [name, value] : fields.variables) field("variable:" + name, value);
  return h.hex_digest();
}

}  // namespace canopy
