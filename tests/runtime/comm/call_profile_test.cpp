// CallProfile without a GPU: off, it records nothing; on, each mark charges the time since the last one to its phase
// and the report gives the mean per call of each phase and their total.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "runtime/comm/call_profile.hpp"
#include "runtime/env/runtime_env.hpp"

namespace canopy {
namespace {

TEST(CallProfile, OffRecordsNothing) {
  CallProfile p;
  p.start();
  p.mark(CallProfile::check);
  p.end();
  EXPECT_EQ(p.calls(), 0u);
}

TEST(CallProfile, MarksChargeTheirPhaseAndTheReportAveragesPerCall) {
  CallProfile p;
  p.on = true;
  for (int call = 0; call < 2; ++call) {
    p.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    p.mark(CallProfile::launch);
    p.end();
  }
  EXPECT_EQ(p.calls(), 2u);
  const std::string r = p.report();
  EXPECT_THAT(r, ::testing::StartsWith("2 calls, host µs per call: entry 0.00 check 0.00 choose 0.00 launch "));
  const double launch = std::stod(r.substr(r.find("launch ") + 7));
  EXPECT_GE(launch, 20000.0);
  EXPECT_LT(launch, 200000.0);
}

TEST(CallProfile, TheSwitchTakesZeroOrOne) {
  ::setenv("CANOPY_PROFILE_CALLS", "1", 1);
  EXPECT_TRUE(profile_calls_from_environment());
  ::setenv("CANOPY_PROFILE_CALLS", "0", 1);
  EXPECT_FALSE(profile_calls_from_environment());
  ::setenv("CANOPY_PROFILE_CALLS", "yes", 1);
  EXPECT_ANY_THROW(profile_calls_from_environment());
  ::unsetenv("CANOPY_PROFILE_CALLS");
  EXPECT_FALSE(profile_calls_from_environment());
}

}  // namespace
}  // namespace canopy
