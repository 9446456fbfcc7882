// RateLimitedWarnings on an io_context of the test's: the first warnings of an interval are logged as they come, the
// rest counted and summed up in one line when the interval ends or at flush; the next warning starts a new interval.
#include "runtime/transport/bootstrap/rate_limited_warnings.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>

#include "tests/runtime/transport/bootstrap/bootstrap_test_util.hpp"

namespace canopy::testing {
namespace {

TEST(BootstrapWarnings, TheFirstOfAnIntervalAreLoggedAndTheRestSummedUp) {
  asio::io_context io;
  const auto log = std::make_shared<LogLines>();
  RateLimitedWarnings warnings(io, log->logger(), 3, std::chrono::milliseconds(200),
                               [](int count, const std::string& last) {
                                 return fmt::format("{} more; the last: {}", count, last);
                               });
  for (int i = 0; i < 10; ++i) warnings.warn(fmt::format("drop {}", i));
  EXPECT_EQ(log->count("drop "), 3) << log->all();
  EXPECT_EQ(log->count("drop 2"), 1) << log->all();
  EXPECT_EQ(log->count(" more"), 0) << log->all();
  const auto start = std::chrono::steady_clock::now();
  io.run();  // until the interval's timer has fired
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(150));
  EXPECT_EQ(log->count("7 more; the last: drop 9"), 1) << log->all();

  warnings.warn("second 0");  // a new interval
  warnings.warn("second 1");
  warnings.flush();  // nothing was left out: no summary
  EXPECT_EQ(log->count("second "), 2) << log->all();
  for (int i = 0; i < 5; ++i) warnings.warn(fmt::format("third {}", i));
  warnings.flush();
  EXPECT_EQ(log->count("third "), 4) << log->all();  // three lines, and the last in the summary
  EXPECT_EQ(log->count("2 more; the last: third 4"), 1) << log->all();
  io.restart();
  io.run();  // the cancelled timer adds nothing
  EXPECT_EQ(log->count(" more"), 2) << log->all();
}

}  // namespace
}  // namespace canopy::testing
