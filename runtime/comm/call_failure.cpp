// CallFailure (call_failure.hpp): the first reason kept, under one lock, then what the way of running stops.
#include "runtime/comm/call_failure.hpp"

namespace canopy {

void CallFailure::fail(const std::string& why, bool aborted, const Logger& log, const std::function<void()>& also) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_) return;
  why_ = why;
  failed_ = true;
  also();
  if (aborted)
    log.info(LogSubsys::run, why);
  else
    log.warn(LogSubsys::run, why);
}

Status CallFailure::status() {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_ ? Status(StatusCode::remote_error, why_) : Status();
}

}  // namespace canopy
