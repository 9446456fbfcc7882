// Jit and DiskCache with real NVRTC compiles: in-process hits skip generation, a new process hits the disk,
// CANOPY_ALWAYS_COMPILE bypasses both, and 8 processes x 20 compiles at once leave every key compiled once and
// every entry whole.
#include "runtime/jit/jit.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <set>
#include <sstream>

#include "tests/test_util.hpp"

namespace canopy {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const char* what) {
  const fs::path p = fs::temp_directory_path() / fmt::format("canopy-jit-test-{}-{}", what, ::getpid());
  fs::remove_all(p);
  return p;
}

SourceFile tiny_kernel(int which) {
  return {fmt::format("tiny{}.cu", which),
          fmt::format("extern \"C\" __global__ void tiny{0}(float* p) {{ p[threadIdx.x] += {0}; }}\n", which)};
}

TEST(Jit, InProcessHitsSkipGenerationAndNewProcessesHitTheDisk) {
  const fs::path dir = fresh_dir("hits");
  int generated = 0;
  auto make = [&] { return ++generated, tiny_kernel(1); };
  CacheOutcome outcome{};
  std::string key;
  Jit jit{DiskCache(dir)};
  const auto first = jit.get("lookup-1", make, CompileOptions{}, &outcome, &key);
  EXPECT_EQ(outcome, CacheOutcome::compiled);
  EXPECT_EQ(key.size(), 64u);
  const auto second = jit.get("lookup-1", make, CompileOptions{}, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::memory_hit);
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(generated, 1);
  CompileOptions other_arch;
  other_arch.arch = "sm_80";
  jit.get("lookup-1", make, other_arch, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::compiled) << "the architecture is part of the in-process key";
  Jit fresh{DiskCache(dir)};  // as a new process would
  const auto third = fresh.get("lookup-1", make, CompileOptions{}, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::disk_hit);
  EXPECT_EQ(third->cubin, first->cubin);
  fs::remove_all(dir);
}

TEST(Jit, AlwaysCompileBypassesBothCaches) {
  const fs::path dir = fresh_dir("always");
  ::setenv("CANOPY_ALWAYS_COMPILE", "1", 1);
  Jit jit{DiskCache(dir)};
  CacheOutcome outcome{};
  jit.get("k", [] { return tiny_kernel(2); }, CompileOptions{}, &outcome);
  jit.get("k", [] { return tiny_kernel(2); }, CompileOptions{}, &outcome);
  ::unsetenv("CANOPY_ALWAYS_COMPILE");
  EXPECT_EQ(outcome, CacheOutcome::compiled);
  EXPECT_EQ(DiskCache(dir).info().entries, 0);
  fs::remove_all(dir);
}

TEST(DiskCacheConcurrency, EightProcessesTimesTwentyCompilesCompileEachKeyOnce) {
  const fs::path dir = fresh_dir("stress");
  fs::create_directories(dir);
  constexpr int kProcesses = 8, kCompiles = 20;
  std::vector<pid_t> children;
  std::vector<fs::path> outputs;
  for (int p = 0; p < kProcesses; ++p) {
    outputs.push_back(dir / fmt::format("out{}.txt", p));
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string out = outputs.back().string(), d = dir.string(), process = std::to_string(p),
                        count = std::to_string(kCompiles);
      const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execl(CANOPY_CACHE_STRESS, CANOPY_CACHE_STRESS, d.c_str(), process.c_str(), count.c_str(), nullptr);
      ::_exit(127);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a stress process failed";
  }
  // Every process saw the same module for each source, and nothing was reported corrupt.
  std::map<int, std::set<std::string>> modules;
  for (const fs::path& out : outputs) {
    std::istringstream lines(testing::read_file(out));
    int which = 0, lines_read = 0;
    std::string sha;
    while (lines >> which >> sha) modules[which].insert(sha), ++lines_read;
    EXPECT_EQ(lines_read, kCompiles) << testing::read_file(out);
  }
  constexpr std::size_t kKeys = 10 + kProcesses * (kCompiles / 4);  // shared, plus each process's own
  ASSERT_EQ(modules.size(), kKeys);
  for (const auto& [which, shas] : modules) EXPECT_EQ(shas.size(), 1u) << "kernel " << which;
  // The per-key lock made every key compile exactly once across the 8 processes.
  std::istringstream log(testing::read_file(dir / "compiles.log"));
  std::map<std::string, int> compiles;
  std::string key;
  while (log >> key) ++compiles[key];
  EXPECT_EQ(compiles.size(), kKeys);
  for (const auto& [k, n] : compiles) EXPECT_EQ(n, 1) << k;
  // And every entry verifies.
  DiskCache cache(dir);
  ::testing::internal::CaptureStderr();
  for (const CacheEntryInfo& e : cache.list()) EXPECT_TRUE(cache.load(e.key)) << e.key;
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(cache.info().entries, static_cast<int>(kKeys));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace canopy
