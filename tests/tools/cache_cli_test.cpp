// `canopy cache info|list|clear` as users run it, on a private cache folder named by CANOPY_CACHE_DIR.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/sha256.hpp"
#include "runtime/jit/disk_cache.hpp"
#include "tests/runtime/jit/cache_test_util.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

using CliRun = testing::CommandRun;

CliRun canopy_cache(const std::filesystem::path& dir, const std::string& args, const std::string& env = "") {
  const std::string command =
      fmt::format("CANOPY_CACHE_DIR='{}' {} {} cache {} 2>&1", dir.string(), env, CANOPY_CLI, args);
  return testing::run_command(command);
}

TEST(CacheCli, InfoListAndClearAFilledCache) {
  testing::TempDir dir;
  DiskCache cache(dir.path());
  const std::string a = sha256_hex("a"), b = sha256_hex("b");
  cache.store(a, "canopy_allreduce_a.cu", "sm_90", testing::fake_module("a", 3000));
  cache.store(b, "canopy_broadcast_b.cu", "sm_80", testing::fake_module("b", 3000));

  CliRun r = canopy_cache(dir.path(), "info");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(dir.path().string()));
  EXPECT_THAT(r.output, HasSubstr("entries    2"));
  EXPECT_THAT(r.output, HasSubstr("of 1.0 GiB cap"));

  r = canopy_cache(dir.path(), "info", "CANOPY_CACHE_MAX_BYTES=1048576");
  EXPECT_THAT(r.output, HasSubstr("of 1.0 MiB cap"));

  r = canopy_cache(dir.path(), "list");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(a.substr(0, 16)));
  EXPECT_THAT(r.output, HasSubstr("canopy_broadcast_b.cu"));
  EXPECT_THAT(r.output, HasSubstr("sm_80"));

  r = canopy_cache(dir.path(), "list --json");
  EXPECT_EQ(r.status, 0) << r.output;
  const auto json = nlohmann::json::parse(r.output);
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["key"].get<std::string>().size(), 64u);
  EXPECT_GT(json[0]["bytes"].get<int>(), 3000);

  r = canopy_cache(dir.path(), "clear");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("removed 2 entries"));
  EXPECT_THAT(r.output, HasSubstr(dir.path().string()));
  EXPECT_THAT(canopy_cache(dir.path(), "list").output, HasSubstr("(the cache is empty)"));
  EXPECT_THAT(canopy_cache(dir.path(), "clear").output, HasSubstr("removed 0 entries"));
}

TEST(CacheCli, HelpHasExamplesAndBadSettingsAreNamed) {
  testing::TempDir dir;
  CliRun r = canopy_cache(dir.path(), "--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("canopy cache clear"));
  EXPECT_THAT(r.output, HasSubstr("CANOPY_CACHE_MAX_BYTES"));
  r = canopy_cache(dir.path(), "info", "CANOPY_CACHE_MAX_BYTES=lots");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, HasSubstr("CANOPY_CACHE_MAX_BYTES='lots'"));
  r = canopy_cache(dir.path(), "");
  EXPECT_EQ(r.status, 2) << "a missing subcommand is a usage error";
}

}  // namespace
}  // namespace canopy
