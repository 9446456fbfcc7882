// CallProfile without a GPU: off, it records nothing; on, each mark charges the time since the last one to its phase
// and the report gives the mean per call of each phase and their total, over the calls in steady state (a call over
// 100 µs is counted apart); a shift moves time timed inside a phase to another.
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

// Busy for about `us` microseconds (a sleep would last far longer than asked on a loaded machine).
void spin_for(int us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

double phase_mean(const std::string& report, const std::string& phase) {
  const std::size_t at = report.find(" " + phase + " ");
  return at == std::string::npos ? -1.0 : std::stod(report.substr(at + phase.size() + 2));
}

TEST(CallProfile, MarksChargeTheirPhaseAndTheReportAveragesPerCall) {
  CallProfile p;
  p.on = true;
  p.cold_ns = 10'000'000'000;  // a machine that preempts the spin must not make it cold
  for (int call = 0; call < 2; ++call) {
    p.start();
    spin_for(20);
    p.mark(CallProfile::launch);
    p.end();
  }
  EXPECT_EQ(p.calls(), 2u);
  EXPECT_EQ(p.cold(), 0u);
  const std::string r = p.report();
  EXPECT_THAT(r, ::testing::StartsWith("2 calls (0 over 10000000 µs left out: a first call compiles or loads), "
                                       "host µs per call: entry 0.00 check 0.00 choose 0.00 launch "));
  EXPECT_GE(phase_mean(r, "launch"), 20.0);
  EXPECT_LT(phase_mean(r, "launch"), 10000.0);  // not wildly off, even on a loaded machine
}

TEST(CallProfile, ACallOverTheColdLimitIsCountedApart) {
  CallProfile p;
  p.on = true;
  EXPECT_EQ(p.cold_ns, 100'000u);  // the default: 100 µs
  p.cold_ns = 1'000'000;           // here 1 ms, so the spin below stays warm on a loaded machine
  p.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a first call: compiles, loads
  p.mark(CallProfile::choose);
  p.end();
  p.start();
  spin_for(10);
  p.mark(CallProfile::launch);
  p.end();
  EXPECT_EQ(p.calls(), 1u);
  EXPECT_EQ(p.cold(), 1u);
  const std::string r = p.report();
  EXPECT_THAT(r, ::testing::StartsWith("1 calls (1 over 1000 µs left out"));
  EXPECT_LT(phase_mean(r, "choose"), 1.0);  // the slow call's phase is not in the means
  EXPECT_GE(phase_mean(r, "launch"), 10.0);
}

TEST(CallProfile, AShiftMovesTimeTimedInsideAPhaseToAnother) {
  CallProfile p;
  p.on = true;
  p.cold_ns = 10'000'000'000;
  p.start();
  spin_for(30);
  p.mark(CallProfile::launch);
  p.shift(CallProfile::launch, CallProfile::api, 20'000);   // 20 of the ~30 µs were the launch call
  p.shift(CallProfile::check, CallProfile::api, 5'000);     // nothing in check: nothing moves
  p.end();
  const std::string r = p.report();
  EXPECT_NEAR(phase_mean(r, "api"), 20.0, 0.01);
  EXPECT_GE(phase_mean(r, "launch"), 10.0);
  EXPECT_EQ(phase_mean(r, "check"), 0.0);
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
