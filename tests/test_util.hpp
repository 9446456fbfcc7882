// Helpers shared by the test suites: source-tree paths, whole-file reads, golden-file comparison, seeded RNGs, the
// GPU tests' largest count and parameter names.
#pragma once

#include <sys/wait.h>

#include <cctype>
#include <cstdio>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <source_location>
#include <sstream>
#include <string>

namespace canopy::testing {

// Sets an environment variable (null or nullopt: unsets it) for one scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const char* value)
      : ScopedEnv(std::move(name), value ? std::optional<std::string>(value) : std::nullopt) {}
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value)
      ::setenv(name_.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline std::filesystem::path source_dir() { return CANOPY_SOURCE_DIR; }

// The line it is called from: a test that builds a faulty program notes where, to expect that line in the error.
inline int source_line(std::source_location where = std::source_location::current()) {
  return static_cast<int>(where.line());
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ADD_FAILURE() << "cannot read " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Compares `actual` with the golden file byte for byte. CANOPY_UPDATE_GOLDEN=1 rewrites the file instead (then
// review the diff in git before committing it).
inline void expect_golden(const std::filesystem::path& golden, const std::string& actual) {
  if (const char* u = std::getenv("CANOPY_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::filesystem::create_directories(golden.parent_path());
    std::ofstream(golden, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(golden)) << golden << " is missing; run with CANOPY_UPDATE_GOLDEN=1";
  EXPECT_EQ(read_file(golden), actual) << "differs from golden " << golden
                                       << " (CANOPY_UPDATE_GOLDEN=1 rewrites it if the change is intended)";
}

// Runs a shell command; returns its exit status (-1 when it did not exit) and its stdout and stderr together
// (append 2>&1 to the command for stderr).
struct CommandRun {
  int status = -1;
  std::string output;
};
inline CommandRun run_command(const std::string& command) {
  CommandRun r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) r.output.append(buffer, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The largest element count the GPU tests run: 2^26, or CANOPY_TEST_MAX_COUNT for quick runs.
// The number printed right after `marker` in `text` (a time in ms, a count; -1 where `marker` is not there).
inline long long time_after(const std::string& text, const std::string& marker) {
  const std::size_t p = text.find(marker);
  return p == std::string::npos ? -1 : std::stoll(text.substr(p + marker.size()));
}

inline std::uint64_t test_max_count() {
  std::uint64_t count = std::uint64_t{1} << 26;
  if (const char* s = std::getenv("CANOPY_TEST_MAX_COUNT")) count = std::strtoull(s, nullptr, 10);
  return count;
}

// The share of a GPU's memory one GPU test may fill with buffers: `fallback`, or CANOPY_TEST_MEMORY_FRACTION when
// several tests share the GPUs at once (bench/device-run runs them in parallel and divides the memory).
inline double test_memory_fraction(double fallback) {
  if (const char* s = std::getenv("CANOPY_TEST_MEMORY_FRACTION")) {
    const double f = std::strtod(s, nullptr);
    if (f > 0 && f <= 1) return f;
  }
  return fallback;
}

// `text` as a GoogleTest parameter name: every character but letters and digits becomes '_'.
inline std::string test_name(std::string text) {
  for (char& ch : text)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return text;
}

// A generator seeded from CANOPY_TEST_SEED or a fixed default; the seed is printed so failures can be replayed.
inline std::mt19937_64 seeded_rng(const char* what) {
  std::uint64_t seed = 20261122;
  if (const char* s = std::getenv("CANOPY_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::cout << "[ seed ] " << what << ": CANOPY_TEST_SEED=" << seed << "\n";
  return std::mt19937_64(seed);
}

}  // namespace canopy::testing
