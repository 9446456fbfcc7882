// The watchdog's rules: poll interval and the action on its oldest launch.
#include "runtime/watchdog/watch_rules.hpp"

#include <algorithm>

namespace canopy {

double watch_poll_seconds(double limit_seconds) { return std::min(0.1, limit_seconds / 10); }

WatchAction watch_action(bool finished, bool reported, double age_seconds, double limit_seconds) {
  if (finished) return reported ? WatchAction::forget_after_report : WatchAction::forget;
  if (age_seconds >= limit_seconds && !reported) return WatchAction::report_stuck;
  return WatchAction::wait;
}

}  // namespace canopy
