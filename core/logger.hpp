// Logger: CANOPY_LOG=warn|info|debug (default warn) and CANOPY_LOG_SUBSYS=init,plan,jit,run,watchdog (default
// all), as NCCL_DEBUG and NCCL_DEBUG_SUBSYS. One line a message on stderr:
//   canopy 4711 INFO [plan] allreduce f32 sum on h200x2: 4 trees, predicted 478 GB/s ...
// A value type: a Communicator owns one (no global logger); tests give it a sink.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace canopy {

enum class LogLevel { off = 0, warn = 1, info = 2, debug = 3 };
enum class LogSubsys : unsigned { init = 1, plan = 2, jit = 4, run = 8, watchdog = 16 };

std::string to_string(LogSubsys subsys);

class Logger {
 public:
  using Sink = std::function<void(std::string_view line)>;

  Logger() = default;
  Logger(LogLevel level, unsigned subsys_mask) : level_(level), mask_(subsys_mask) {}
  // Reads CANOPY_LOG and CANOPY_LOG_SUBSYS. A value it does not know is reported once (as a warning through
  // the returned logger) and otherwise ignored: a typo in a variable must not stop a training job.
  static Logger from_environment();

  bool enabled(LogLevel level, LogSubsys subsys) const {
    return level <= level_ && (level == LogLevel::warn || (mask_ & static_cast<unsigned>(subsys)) != 0);
  }
  void log(LogLevel level, LogSubsys subsys, std::string_view message) const;
  void warn(LogSubsys s, std::string_view m) const { log(LogLevel::warn, s, m); }
  void info(LogSubsys s, std::string_view m) const { log(LogLevel::info, s, m); }
  void debug(LogSubsys s, std::string_view m) const { log(LogLevel::debug, s, m); }

  void set_sink(Sink sink) { sink_ = std::move(sink); }  // default: stderr
  LogLevel level() const { return level_; }

 private:
  LogLevel level_ = LogLevel::warn;
  unsigned mask_ = ~0u;
  Sink sink_;
};

}  // namespace canopy
