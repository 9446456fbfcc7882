// DiskCache never trusts what it finds and never crashes on it: randomly damaged meta.json, foreign folders, stale
// temporaries of dead processes; eviction and clear leave entries in use alone; the per-key lock survives the
// deletion of its file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "core/sha256.hpp"
#include "core/error.hpp"
#include "runtime/jit/disk_cache.hpp"
#include "runtime/jit/file_lock.hpp"
#include "tests/runtime/jit/cache_test_util.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

namespace fs = std::filesystem;
using testing::fake_module;
using testing::TempDir;
using ::testing::HasSubstr;

using testing::key_of;

TEST(DiskCacheRobustness, RandomlyDamagedMetaIsRejectedOrExactNeverACrash) {
  auto rng = testing::seeded_rng("DiskCacheRobustness.RandomlyDamagedMeta");
  TempDir dir;
  DiskCache cache(dir.path());
  const std::string key = key_of("fuzz");
  const CompiledModule m = fake_module("fuzz");
  cache.store(key, "k.cu", "sm_90", m);
  const fs::path meta = cache.entry_path(key) / "meta.json";
  const std::string good = testing::read_file(meta);
  int rejected = 0;
  for (int round = 0; round < 300; ++round) {
    if (!fs::exists(meta)) cache.store(key, "k.cu", "sm_90", m);
    std::string text = good;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 4) {
        case 0: text[at] = static_cast<char>(rng() % 256); break;             // any byte
        case 1: text[at] = "0123456789{}[]\":,-.aZ "[rng() % 22]; break;       // a JSON-ish byte
        case 2: text.erase(at, 1 + rng() % 8); break;                          // a hole
        case 3: text.resize(at); break;                                        // truncated
      }
    }
    std::ofstream(meta, std::ios::binary | std::ios::trunc) << text;
    ::testing::internal::CaptureStderr();
    std::optional<CompiledModule> back;
    EXPECT_NO_THROW(back = cache.load(key)) << "round " << round;
    const std::string warning = ::testing::internal::GetCapturedStderr();
    if (back) {
      EXPECT_EQ(back->cubin, m.cubin) << "round " << round << ": a damaged entry returned other bytes";
      EXPECT_EQ(back->ptx, m.ptx) << "round " << round;
    } else {
      ++rejected;
      EXPECT_THAT(warning, HasSubstr("is corrupt")) << "round " << round;
      EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << "one line per damaged entry: " << warning;
      EXPECT_FALSE(fs::exists(cache.entry_path(key))) << "round " << round << ": a corrupt entry was kept";
    }
  }
  EXPECT_GT(rejected, 200);
}

TEST(DiskCacheRobustness, ForeignFilesInTheCacheFolderAreLeftAlone) {
  TempDir dir;
  DiskCache cache(dir.path());
  cache.store(key_of("a"), "a.cu", "sm_90", fake_module("a"));
  fs::create_directories(dir.path() / "v1" / "zz" / "not a key");
  std::ofstream(dir.path() / "v1" / "README") << "hello";
  std::ofstream(dir.path() / "v1" / "zz" / "stray.txt") << "hello";
  EXPECT_EQ(cache.list().size(), 1u);
  EXPECT_EQ(cache.info().entries, 1);
  EXPECT_EQ(cache.clear().entries, 1);
  EXPECT_TRUE(fs::exists(dir.path() / "v1" / "zz" / "not a key"));
  EXPECT_TRUE(fs::exists(dir.path() / "v1" / "README"));
}

TEST(DiskCacheRobustness, StaleTemporariesOfDeadWritersAreRemoved) {
  TempDir dir;
  DiskCache cache(dir.path());
  const fs::path shard = dir.path() / "v1" / "ab";
  fs::create_directories(shard / ".tmp-abcdef-1234-old");
  std::ofstream(shard / ".tmp-abcdef-1234-old" / "module.cubin") << "half a cubin";
  fs::last_write_time(shard / ".tmp-abcdef-1234-old", fs::file_time_type::clock::now() - std::chrono::hours(2));
  fs::create_directories(shard / ".tmp-abcdef-1234-young");  // a write in progress in another process
  cache.store(key_of("b"), "b.cu", "sm_90", fake_module("b"));
  EXPECT_FALSE(fs::exists(shard / ".tmp-abcdef-1234-old"));
  EXPECT_TRUE(fs::exists(shard / ".tmp-abcdef-1234-young"));
  EXPECT_EQ(cache.info().entries, 1) << "temporaries are not entries";
}

TEST(DiskCacheRobustness, EvictionKeepsTheEntryJustStoredAndEntriesInUse) {
  TempDir dir;
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(5);
  DiskCache tiny(dir.path(), 1);  // smaller than any entry
  tiny.store(key_of("first"), "first.cu", "sm_90", fake_module("first"));
  EXPECT_TRUE(tiny.load(key_of("first"))) << "the entry just stored survives its own eviction";
  fs::last_write_time(tiny.entry_path(key_of("first")) / "meta.json", old);
  {
    // Another process is verifying "first" (holds its lock): storing "second" must not pull it away.
    fs::create_directories(dir.path() / "v1" / "locks");
    FileLock in_use(dir.path() / "v1" / "locks" / (key_of("first") + ".lock"));
    tiny.store(key_of("second"), "second.cu", "sm_90", fake_module("second"));
    EXPECT_TRUE(fs::exists(tiny.entry_path(key_of("first"))));
    const CacheClearReport r = tiny.clear();
    EXPECT_EQ(r.in_use, 1);
    EXPECT_EQ(r.entries, 1);
  }
  tiny.store(key_of("third"), "third.cu", "sm_90", fake_module("third"));
  EXPECT_FALSE(fs::exists(tiny.entry_path(key_of("first"))));
  EXPECT_TRUE(fs::exists(tiny.entry_path(key_of("third"))));
}

TEST(DiskCacheRobustness, ClearRemovesLockFilesItCanTake) {
  TempDir dir;
  DiskCache cache(dir.path());
  for (const char* k : {"a", "b"})
    cache.load_or_compile(key_of(k), "k.cu", "sm_90", [&] { return fake_module(k); });
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path() / "v1" / "locks"), fs::directory_iterator()), 2);
  EXPECT_EQ(cache.clear().entries, 2);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path() / "v1" / "locks"), fs::directory_iterator()), 0);
  EXPECT_EQ(cache.info().entries, 0);
  EXPECT_FALSE(cache.load(key_of("a")));
}

TEST(DiskCacheRobustness, ADiskHitRestoresStatisticsAndLog) {
  TempDir dir;
  DiskCache cache(dir.path());
  const CompiledModule m = fake_module("stats");
  cache.store(key_of("s"), "s.cu", "sm_90", m);
  const auto back = cache.load(key_of("s"));
  ASSERT_TRUE(back);
  ASSERT_EQ(back->kernels.size(), 1u);
  EXPECT_EQ(back->kernels[0].registers, 40);
  EXPECT_EQ(back->kernels[0].spill_store_bytes, 4);
  EXPECT_EQ(back->kernels[0].spill_load_bytes, 8);
  EXPECT_EQ(back->kernels[0].stack_bytes, 16);
  EXPECT_EQ(back->log, m.log);
  EXPECT_EQ(back->compile_ms, m.compile_ms);
  const std::string meta = testing::read_file(cache.entry_path(key_of("s")) / "meta.json");
  for (const char* field : {"\"created\"", "\"nvrtc\"", "\"canopy\"", "\"sha256\"", "\"arch\": \"sm_90\""})
    EXPECT_THAT(meta, HasSubstr(field));
}

TEST(FileLock, ExcludesOthersAndSurvivesItsFileBeingDeleted) {
  TempDir dir;
  const fs::path path = dir.path() / "k.lock";
  std::optional<FileLock> first(std::in_place, path);
  EXPECT_FALSE(FileLock::try_lock(path)) << "a second holder got in";
  // A waiter queued on the file that the holder then deletes must end up holding the path's new file.
  std::optional<FileLock> second;
  std::thread waiter([&] { second.emplace(path); });
  first->remove_file();
  first.reset();
  waiter.join();
  ASSERT_TRUE(second);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(FileLock::try_lock(path)) << "the waiter locked a deleted file, so a newcomer got in too";
  second.reset();
  EXPECT_TRUE(FileLock::try_lock(path));
}

TEST(FileLock, AnUncreatableLockIsAClearError) {
  TempDir dir;
  std::ofstream(dir.path() / "file") << "x";
  try {
    FileLock lock(dir.path() / "file" / "k.lock");
    ADD_FAILURE() << "locked a file under a regular file";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("k.lock"));
    EXPECT_THAT(e.what(), HasSubstr("CANOPY_CACHE_DIR"));
  }
}

TEST(DiskCacheRobustness, AFolderUnderAFileIsAClearErrorNamingTheVariable) {
  TempDir dir;
  std::ofstream(dir.path() / "file") << "x";
  DiskCache cache(dir.path() / "file" / "cache");
  EXPECT_FALSE(cache.load(key_of("a")));
  try {
    cache.load_or_compile(key_of("a"), "a.cu", "sm_90", [] { return fake_module("a"); });
    ADD_FAILURE() << "stored under a regular file";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr((dir.path() / "file" / "cache").string()));
    EXPECT_THAT(e.what(), HasSubstr("CANOPY_CACHE_DIR"));
  }
}

}  // namespace
}  // namespace canopy
