// CallFailure: why a communicator cannot go on, kept once from any thread (the first reason wins): another process
// ended or stopped calling, a mismatched call, abort() or fail(). Every later call returns status(). Each way of
// running adds what its failing must stop (the abort word its kernels poll, the host rings, the shared pages, the
// rails) as `also`, run under the same lock before the reason is logged.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>

#include "core/logger.hpp"
#include "core/status.hpp"

namespace canopy {

class CallFailure {
 public:
  // Keeps `why` unless a reason is kept already; then runs `also` and logs `why` (at info where `aborted`: the user
  // asked for it; else a warning).
  void fail(const std::string& why, bool aborted, const Logger& log, const std::function<void()>& also);
  bool failed() const { return failed_.load(); }
  Status status();  // remote_error with the reason, or ok

 private:
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::string why_;
};

}  // namespace canopy
