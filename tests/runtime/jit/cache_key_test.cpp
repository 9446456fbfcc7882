// The cache key against the fields besides source and options: Canopy's and NVRTC's versions, the code-changing
// CANOPY_ variables, and the embedded template bundle standing for its own headers.
#include "runtime/jit/cache_key.hpp"

#include <gtest/gtest.h>

#include <set>

#include "codegen/template_bundle.hpp"
#include "core/version.hpp"

namespace canopy {
namespace {

const SourceFile kSource{"k.cu", "extern \"C\" __global__ void k() {}\n"};

TEST(CacheKey, ChangesWithTheVersionsAndVariables) {
  const CacheKeyFields base{"0.1.0", "13.0", {{"CANOPY_X", "1"}}};
  std::set<std::string> keys;
  auto add = [&](const CacheKeyFields& f) { return keys.insert(compile_cache_key(kSource, {}, {}, f)).second; };
  EXPECT_TRUE(add(base));
  EXPECT_FALSE(add(base)) << "the key must be deterministic";
  EXPECT_TRUE(add({"0.1.1", "13.0", {{"CANOPY_X", "1"}}})) << "Canopy's version";
  EXPECT_TRUE(add({"0.1.0", "13.1", {{"CANOPY_X", "1"}}})) << "NVRTC's version";
  EXPECT_TRUE(add({"0.1.0", "13.0", {{"CANOPY_X", "2"}}})) << "a variable's value";
  EXPECT_TRUE(add({"0.1.0", "13.0", {{"CANOPY_X", "<unset>"}}})) << "a variable unset";
  EXPECT_TRUE(add({"0.1.0", "13.0", {{"CANOPY_Y", "1"}}})) << "another variable";
  EXPECT_TRUE(add({"0.1.0", "13.0", {}})) << "no variables";
  // Moving text across a field boundary changes the key.
  EXPECT_TRUE(add({"0.1.01", "3.0", {{"CANOPY_X", "1"}}}));
}

TEST(CacheKey, CurrentFieldsAreThisBuildsVersions) {
  const CacheKeyFields f = current_cache_key_fields();
  EXPECT_EQ(f.canopy_version, CANOPY_VERSION);
  EXPECT_EQ(f.nvrtc_version, nvrtc_version());
  EXPECT_EQ(f.variables.size(), code_changing_variables().size());
  EXPECT_EQ(compile_cache_key(kSource, {}, {}), compile_cache_key(kSource, {}, {}, f));
}

TEST(CacheKey, TheTemplateBundleKeysByItsHash) {
  const std::vector<SourceFile> copy = template_headers();
  ASSERT_FALSE(copy.empty());
  EXPECT_EQ(compile_cache_key(kSource, template_headers(), {}), compile_cache_key(kSource, copy, {}));
  std::vector<SourceFile> edited = copy;
  edited.back().text += "\n// edited\n";
  EXPECT_NE(compile_cache_key(kSource, template_headers(), {}), compile_cache_key(kSource, edited, {}));
  std::vector<SourceFile> renamed = copy;
  renamed.back().name += "x";
  EXPECT_NE(compile_cache_key(kSource, template_headers(), {}), compile_cache_key(kSource, renamed, {}));
}

TEST(CacheKey, SeparatesOptionsAndHeadersUnambiguously) {
  CompileOptions a, b;
  a.extra_options = {"-DA", "-DB"};
  b.extra_options = {"-DA-DB"};
  EXPECT_NE(compile_cache_key(kSource, {}, a), compile_cache_key(kSource, {}, b));
  EXPECT_NE(compile_cache_key(kSource, {{"h", "ab"}, {"g", "c"}}, {}),
            compile_cache_key(kSource, {{"h", "a"}, {"bg", "c"}}, {}));
  EXPECT_NE(compile_cache_key(kSource, {{"h", "x"}}, {}), compile_cache_key({"k.cu", kSource.text + "x"}, {}, {}));
}

}  // namespace
}  // namespace canopy
