// Warnings limited to a number an interval, the rest summed up (see rate_limited_warnings.hpp).
#include "runtime/transport/bootstrap/rate_limited_warnings.hpp"

namespace canopy {

RateLimitedWarnings::RateLimitedWarnings(asio::io_context& io, Logger logger, int per_interval,
                                         std::chrono::milliseconds interval, Summary summary)
    : logger_(std::move(logger)),
      per_interval_(per_interval),
      interval_(interval),
      summary_(std::move(summary)),
      timer_(io) {}

void RateLimitedWarnings::warn(std::string line) {
  if (!running_) {
    running_ = true;
    logged_ = 0;
    timer_.expires_after(interval_);
    timer_.async_wait([this, interval = ++interval_number_](const boost::system::error_code& ec) {
      if (!ec && interval == interval_number_) end_interval();  // not one that flush ended already
    });
  }
  if (logged_ < per_interval_) {
    ++logged_;
    logger_.warn(LogSubsys::init, line);
    return;
  }
  ++left_out_;
  last_ = std::move(line);
}

void RateLimitedWarnings::end_interval() {
  running_ = false;
  if (left_out_ > 0) logger_.warn(LogSubsys::init, summary_(left_out_, last_));
  left_out_ = 0;
  last_.clear();
}

void RateLimitedWarnings::flush() {
  timer_.cancel();
  ++interval_number_;
  end_interval();
}

}  // namespace canopy
