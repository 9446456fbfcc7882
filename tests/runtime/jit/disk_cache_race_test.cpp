// Eviction racing reads, across processes and without NVRTC: one process keeps storing new entries into a cache
// capped at five, evicting all the time, while three others keep loading (and re-storing when gone) four entries
// they share. An entry that vanishes under a reader is a miss, never "corrupt": no warning may appear, and what every
// reader loads is exactly what was stored.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/sha256.hpp"
#include "runtime/jit/disk_cache.hpp"
#include "tests/runtime/jit/cache_test_util.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kEntryBytes = 50000;

CompiledModule module_of(const std::string& key) {
  CompiledModule m;
  m.cubin.assign(kEntryBytes, key[0]);
  m.cubin += key;
  return m;
}

// Runs in a forked child: returns the exit status (0, or 1 when a load returned other bytes than were stored).
int run_role(const fs::path& dir, int role, int rounds) {
  DiskCache cache(dir, 5 * (kEntryBytes + 1000));
  for (int i = 0; i < rounds; ++i) {
    if (role == 0) {
      const std::string k = sha256_hex(fmt::format("writer{}", i));
      cache.store(k, "w.cu", "sm_90", module_of(k));
      continue;
    }
    const std::string k = sha256_hex(fmt::format("shared{}", i % 4));
    if (auto m = cache.load(k)) {
      if (m->cubin != module_of(k).cubin) return 1;
    } else {
      cache.store(k, "r.cu", "sm_90", module_of(k));
    }
  }
  return 0;
}

TEST(DiskCacheConcurrency, AnEntryEvictedUnderAReaderIsAMissNotCorruption) {
  testing::TempDir dir;
  constexpr int kRoles = 4, kRounds = 400;
  std::vector<pid_t> children;
  for (int role = 0; role < kRoles; ++role) {
    const std::string err = (dir.path() / fmt::format("err{}.txt", role)).string();
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 2);
      int status = 2;
      try {
        status = run_role(dir.path() / "cache", role, kRounds);
      } catch (const std::exception& e) {
        fmt::print(stderr, "threw: {}\n", e.what());
      }
      std::fflush(stderr);
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (int role = 0; role < kRoles; ++role) {
    int status = 0;
    ::waitpid(children[role], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "role " << role << " status " << status;
    EXPECT_EQ(testing::read_file(dir.path() / fmt::format("err{}.txt", role)), "") << "role " << role;
  }
  EXPECT_LE(DiskCache(dir.path() / "cache").info().entries, 5 + kRoles) << "eviction fell behind";
}

}  // namespace
}  // namespace canopy
