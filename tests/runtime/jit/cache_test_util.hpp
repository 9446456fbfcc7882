// Helpers for the cache tests: a private temporary cache folder per test, environment variables set for one
// scope, and fake compiled modules (no NVRTC needed).
#pragma once

#include <fmt/format.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "core/sha256.hpp"
#include "runtime/jit/nvrtc_compiler.hpp"
#include "tests/test_util.hpp"

namespace canopy::testing {

// A fresh folder under the system's temporary folder, deleted with everything in it at the end of the scope.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "canopy-cache-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};


// A cache key made from `s` (SHA-256, as real keys are).
inline std::string key_of(const std::string& s) { return sha256_hex(s); }

// A module whose bytes depend on `seed` only: what a compile would return, without NVRTC.
inline CompiledModule fake_module(const std::string& seed, std::size_t bytes = 1000) {
  CompiledModule m;
  m.cubin = "\x7f" "ELF";
  for (std::size_t i = m.cubin.size(); i < bytes; ++i) m.cubin += static_cast<char>((seed[i % seed.size()] + i) % 251);
  m.ptx = "// ptx of " + seed;
  m.log = "ptxas info    : Used 40 registers (" + seed + ")";
  m.kernels = {{"entry_" + seed, 40, 4, 8, 256, 16}};
  m.compile_ms = 12.5;
  return m;
}

}  // namespace canopy::testing
