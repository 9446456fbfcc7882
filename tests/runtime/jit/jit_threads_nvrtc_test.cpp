// Jit under concurrency and failure: threads asking for one kernel at once generate and compile it once; a
// compile error reaches every caller and is not remembered; a repeated call is a map lookup that reports the key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/error.hpp"
#include "runtime/jit/jit.hpp"
#include "tests/runtime/jit/cache_test_util.hpp"

namespace canopy {
namespace {

using testing::TempDir;
using ::testing::HasSubstr;

SourceFile tiny(const std::string& name, int value) {
  return {name + ".cu",
          fmt::format("extern \"C\" __global__ void {}(float* p) {{ p[threadIdx.x] += {}; }}\n", name, value)};
}

TEST(JitThreads, EightThreadsAskingAtOnceGenerateAndCompileOnce) {
  TempDir dir;
  testing::ScopedEnv always("CANOPY_ALWAYS_COMPILE", std::nullopt);
  Jit jit{DiskCache(dir.path())};
  std::atomic<int> generated{0};
  constexpr int kThreads = 8;
  std::vector<std::shared_ptr<const CompiledModule>> modules(kThreads);
  std::vector<CacheOutcome> outcomes(kThreads);
  std::vector<std::string> keys(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      modules[t] = jit.get("same", [&] { return ++generated, tiny("same", 1); }, CompileOptions{}, &outcomes[t],
                           &keys[t]);
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(generated.load(), 1);
  EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), CacheOutcome::compiled), 1);
  EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), CacheOutcome::memory_hit), kThreads - 1);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(modules[t].get(), modules[0].get());
    EXPECT_EQ(keys[t], keys[0]);
  }
  EXPECT_EQ(keys[0].size(), 64u);
}

TEST(JitThreads, ACompileErrorReachesTheCallerAndIsNotRemembered) {
  TempDir dir;
  testing::ScopedEnv always("CANOPY_ALWAYS_COMPILE", std::nullopt);
  Jit jit{DiskCache(dir.path())};
  int generated = 0;
  const auto bad = [&] {
    ++generated;
    return SourceFile{"broken.cu", "extern \"C\" __global__ void broken() {\n  nope();\n}\n"};
  };
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      jit.get("broken", bad, CompileOptions{});
      ADD_FAILURE() << "compiled";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("broken.cu(2): error"));
    }
  }
  EXPECT_EQ(generated, 2) << "a failed compile must be retried, not cached";
  EXPECT_EQ(DiskCache(dir.path()).info().entries, 0);
  CacheOutcome outcome{};
  jit.get("broken", [] { return tiny("fixed", 2); }, CompileOptions{}, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::compiled);
}

TEST(JitThreads, ARepeatedCallIsALookupThatStillReportsTheKey) {
  TempDir dir;
  testing::ScopedEnv always("CANOPY_ALWAYS_COMPILE", std::nullopt);
  Jit jit{DiskCache(dir.path())};
  std::string first_key, key;
  jit.get("lookup", [] { return tiny("lookup", 3); }, CompileOptions{}, nullptr, &first_key);
  CacheOutcome outcome{};
  constexpr int kCalls = 20000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i)
    jit.get("lookup", [] { return ADD_FAILURE(), tiny("lookup", 3); }, CompileOptions{}, &outcome, &key);
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kCalls;
  EXPECT_EQ(outcome, CacheOutcome::memory_hit);
  EXPECT_EQ(key, first_key);
  // The target is <= 5 us (bench/jit_bench); this bound only catches a lookup that regenerates or hashes.
  EXPECT_LT(us, 50.0) << "an in-process hit took " << us << " us";
  std::cout << "[ info ] in-process hit: " << us << " us\n";
}

TEST(JitThreads, AlwaysCompileStillReportsTheKeyAndLeavesTheDiskAlone) {
  TempDir dir;
  testing::ScopedEnv always("CANOPY_ALWAYS_COMPILE", "1");
  Jit jit{DiskCache(dir.path())};
  int generated = 0;
  std::string key;
  CacheOutcome outcome{};
  for (int i = 0; i < 2; ++i)
    jit.get("k", [&] { return ++generated, tiny("k", 4); }, CompileOptions{}, &outcome, &key);
  EXPECT_EQ(outcome, CacheOutcome::compiled);
  EXPECT_EQ(generated, 2);
  EXPECT_EQ(key.size(), 64u);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "v1"));
}

}  // namespace
}  // namespace canopy
