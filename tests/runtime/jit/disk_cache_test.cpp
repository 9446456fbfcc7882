// DiskCache and the cache key without NVRTC compiles: hit and miss, keys that change with every input, corrupt
// entries deleted and rebuilt with a warning, least-recently-used eviction, list/info/clear.
#include "runtime/jit/disk_cache.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <fstream>
#include <functional>

#include "runtime/jit/cache_key.hpp"
#include "core/error.hpp"
#include "core/sha256.hpp"
#include "tests/runtime/jit/cache_test_util.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using testing::fake_module;
using testing::TempDir;

using testing::key_of;

fs::path entry_dir(const TempDir& d, const std::string& key) { return d.path() / "v1" / key.substr(0, 2) / key; }

TEST(DiskCache, MissThenHitReturnsTheSameModule) {
  TempDir dir;
  DiskCache cache(dir.path());
  const std::string key = key_of("a");
  EXPECT_FALSE(cache.load(key));
  const CompiledModule m = fake_module("a");
  cache.store(key, "a.cu", "sm_90", m);
  const auto back = cache.load(key);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->cubin, m.cubin);
  EXPECT_EQ(back->ptx, m.ptx);
  ASSERT_EQ(back->kernels.size(), 1u);
  EXPECT_EQ(back->kernels[0].name, "entry_a");
  EXPECT_EQ(back->kernels[0].shared_bytes, 256);
  int compiles = 0;
  bool hit = false;
  cache.load_or_compile(key, "a.cu", "sm_90", [&] { return ++compiles, m; }, &hit);
  EXPECT_TRUE(hit);
  cache.load_or_compile(key_of("b"), "b.cu", "sm_90", [&] { return ++compiles, fake_module("b"); }, &hit);
  EXPECT_FALSE(hit);
  EXPECT_EQ(compiles, 1);
}

TEST(CacheKey, ChangesWithEveryInputAndIgnoresOptionOrder) {
  const SourceFile src{"k.cu", "kernel text"};
  const std::vector<SourceFile> headers{{"canopy/a.cuh", "header"}};
  CompileOptions o;
  o.extra_options = {"-lineinfo", "-DX=1"};
  const std::string base = compile_cache_key(src, headers, o);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(base, compile_cache_key(src, headers, o));
  EXPECT_NE(base, compile_cache_key({"k.cu", "kernel text!"}, headers, o));
  EXPECT_NE(base, compile_cache_key({"j.cu", "kernel text"}, headers, o));
  EXPECT_NE(base, compile_cache_key(src, {{"canopy/a.cuh", "header2"}}, o));
  EXPECT_NE(base, compile_cache_key(src, {{"canopy/b.cuh", "header"}}, o));
  EXPECT_NE(base, compile_cache_key(src, {}, o));
  CompileOptions arch = o;
  arch.arch = "sm_100";
  EXPECT_NE(base, compile_cache_key(src, headers, arch));
  CompileOptions ptx = o;
  ptx.keep_ptx = true;
  EXPECT_NE(base, compile_cache_key(src, headers, ptx));
  CompileOptions extra = o;
  extra.extra_options.push_back("-G");
  EXPECT_NE(base, compile_cache_key(src, headers, extra));
  CompileOptions reordered = o;
  std::swap(reordered.extra_options[0], reordered.extra_options[1]);
  EXPECT_EQ(base, compile_cache_key(src, headers, reordered));
  // Field boundaries are unambiguous: moving text between name and body changes the key.
  EXPECT_NE(compile_cache_key({"ab", "c"}, {}, o), compile_cache_key({"a", "bc"}, {}, o));
}

struct Damage {
  const char* what;
  std::function<void(const fs::path& entry)> apply;
  const char* message;
};

TEST(DiskCache, CorruptEntriesAreDeletedWithAWarningAndRebuilt) {
  const std::vector<Damage> damages = {
      {"flipped cubin byte",
       [](const fs::path& e) {
         std::fstream f(e / "module.cubin", std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(100);
         f.put('\x7f');
       },
       "does not match its checksum"},
      {"truncated cubin", [](const fs::path& e) { fs::resize_file(e / "module.cubin", 10); }, "has 10 bytes"},
      {"truncated meta.json", [](const fs::path& e) { fs::resize_file(e / "meta.json", 20); }, "does not parse"},
      {"missing meta.json", [](const fs::path& e) { fs::remove(e / "meta.json"); }, "meta.json is missing"},
      {"missing cubin", [](const fs::path& e) { fs::remove(e / "module.cubin"); }, "module.cubin is missing"},
      {"missing ptx", [](const fs::path& e) { fs::remove(e / "module.ptx"); }, "module.ptx is missing"},
      {"meta.json of another key",
       [](const fs::path& e) {
         std::string text = testing::read_file(e / "meta.json");
         text[text.find("\"key\": \"") + 8] ^= 1;
         std::ofstream(e / "meta.json") << text;
       },
       "names another key"},
  };
  for (const Damage& d : damages) {
    TempDir dir;
    DiskCache cache(dir.path());
    const std::string key = key_of(d.what);
    const CompiledModule m = fake_module(d.what);
    cache.store(key, "k.cu", "sm_90", m);
    d.apply(entry_dir(dir, key));
    ::testing::internal::CaptureStderr();
    int compiles = 0;
    bool hit = true;
    const CompiledModule rebuilt = cache.load_or_compile(key, "k.cu", "sm_90", [&] { return ++compiles, m; }, &hit);
    const std::string warning = ::testing::internal::GetCapturedStderr();
    EXPECT_THAT(warning, HasSubstr("is corrupt")) << d.what;
    EXPECT_THAT(warning, HasSubstr(d.message)) << d.what;
    EXPECT_EQ(compiles, 1) << d.what;
    EXPECT_FALSE(hit) << d.what;
    EXPECT_EQ(rebuilt.cubin, m.cubin) << d.what;
    const auto again = cache.load(key);
    ASSERT_TRUE(again) << d.what << ": the rebuilt entry does not load";
    EXPECT_EQ(again->cubin, m.cubin) << d.what;
  }
}

TEST(DiskCache, EvictsLeastRecentlyUsedPastTheCap) {
  TempDir dir;
  DiskCache big(dir.path());
  const auto now = fs::file_time_type::clock::now();
  for (int i = 0; i < 3; ++i) {
    const std::string key = key_of(std::to_string(i));
    big.store(key, fmt::format("k{}.cu", i), "sm_90", fake_module(std::to_string(i), 4000));
    fs::last_write_time(entry_dir(dir, key) / "meta.json", now - std::chrono::hours(10 - i));  // 0 oldest
  }
  // Using entry 0 makes entry 1 the least recently used.
  ASSERT_TRUE(big.load(key_of("0")));
  const std::int64_t entry_bytes = big.info().bytes / 3;
  DiskCache capped(dir.path(), entry_bytes * 3 + entry_bytes / 2);
  capped.store(key_of("3"), "k3.cu", "sm_90", fake_module("3", 4000));
  EXPECT_TRUE(fs::exists(entry_dir(dir, key_of("0"))));
  EXPECT_FALSE(fs::exists(entry_dir(dir, key_of("1"))));
  EXPECT_TRUE(fs::exists(entry_dir(dir, key_of("2"))));
  EXPECT_TRUE(fs::exists(entry_dir(dir, key_of("3"))));
  EXPECT_LE(capped.info().bytes, capped.max_bytes());
}

TEST(DiskCache, ListInfoAndClear) {
  TempDir dir;
  DiskCache cache(dir.path(), 12345);
  EXPECT_EQ(cache.info().entries, 0);
  cache.store(key_of("x"), "x.cu", "sm_90", fake_module("x"));
  cache.store(key_of("y"), "y.cu", "sm_80", fake_module("y"));
  const auto entries = cache.list();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(cache.info().entries, 2);
  EXPECT_EQ(cache.info().max_bytes, 12345);
  EXPECT_GT(cache.info().bytes, 2000);
  const CacheClearReport cleared = cache.clear();
  EXPECT_EQ(cleared.entries, 2);
  EXPECT_GT(cleared.bytes, 2000);
  EXPECT_EQ(cleared.in_use, 0);
  EXPECT_EQ(cache.info().entries, 0);
}

TEST(DiskCache, DirectoryComesFromTheEnvironment) {
  ::setenv("CANOPY_CACHE_DIR", "/tmp/somewhere-canopy", 1);
  EXPECT_EQ(DiskCache::default_directory(), fs::path("/tmp/somewhere-canopy"));
  ::unsetenv("CANOPY_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(DiskCache::default_directory(), fs::path("/tmp/xdg/canopy"));
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("CANOPY_CACHE_MAX_BYTES", "12x", 1);
  try {
    DiskCache::from_environment();
    ADD_FAILURE() << "a malformed CANOPY_CACHE_MAX_BYTES was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("CANOPY_CACHE_MAX_BYTES='12x'"));
  }
  ::unsetenv("CANOPY_CACHE_MAX_BYTES");
}

TEST(DiskCache, AnUnwritableDirectoryIsNamed) {
  DiskCache cache("/proc/canopy-cannot-write-here");
  try {
    cache.store(key_of("z"), "z.cu", "sm_90", fake_module("z"));
    ADD_FAILURE() << "stored into /proc";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/proc/canopy-cannot-write-here"));
    EXPECT_THAT(e.what(), HasSubstr("CANOPY_CACHE_DIR"));
  }
}

}  // namespace
}  // namespace canopy
