// RateLimitedWarnings: the warnings a stranger on the network can cause (a dropped connection, a failed accept), at
// most `per_interval` lines an `interval`: the first ones of an interval are logged as they come, the rest are
// counted and logged as one summary line when the interval ends (or at flush), so that a flood of connections cannot
// fill the log. Used on the thread that runs `io` (the bootstrap root's). Private to this folder.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "core/logger.hpp"
#include "runtime/transport/bootstrap/asio_frames.hpp"

namespace canopy {

class RateLimitedWarnings {
 public:
  // `summary(count, last)`: the line that stands for `count` warnings left out of an interval, `last` the latest.
  using Summary = std::function<std::string(int count, const std::string& last)>;
  RateLimitedWarnings(asio::io_context& io, Logger logger, int per_interval, std::chrono::milliseconds interval,
                      Summary summary);

  void warn(std::string line);
  // Logs the summary of what the running interval left out (if anything) now, and starts afresh.
  void flush();

 private:
  void end_interval();

  Logger logger_;
  int per_interval_;
  std::chrono::milliseconds interval_;
  Summary summary_;
  asio::steady_timer timer_;
  bool running_ = false;  // an interval runs: its timer is armed
  unsigned interval_number_ = 0;
  int logged_ = 0;        // lines logged in it
  int left_out_ = 0;      // warnings it counted instead
  std::string last_;      // the latest of those
};

}  // namespace canopy
