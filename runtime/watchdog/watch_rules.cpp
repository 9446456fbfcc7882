// The watchdog's rules: poll interval, the action on its oldest launch, and a peer's launch counter in words.
#include "runtime/watchdog/watch_rules.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace canopy {

double watch_poll_seconds(double limit_seconds) { return std::min(0.1, limit_seconds / 10); }

WatchAction watch_action(bool finished, bool reported, double age_seconds, double limit_seconds) {
  if (finished) return reported ? WatchAction::forget_after_report : WatchAction::forget;
  if (age_seconds >= limit_seconds && !reported) return WatchAction::report_stuck;
  return WatchAction::wait;
}

std::string peer_progress(const std::string& who, std::uint64_t counter, std::uint64_t epoch, bool device_epochs) {
  if (!device_epochs) {
    if (counter >= epoch) return fmt::format("{} has entered launch {}", who, epoch);
    return fmt::format("{} has not entered launch {} ({})", who, epoch,
                       counter == 0 ? "it has entered none" : fmt::format("the last it entered: launch {}", counter));
  }
  if (counter >= epoch) return fmt::format("{} has finished launch {}", who, epoch);
  if (counter + 1 == epoch)
    return fmt::format("{} has finished launch {}; whether it has entered launch {} is not known", who, counter, epoch);
  return fmt::format("{} has not entered launch {}: it has not finished launch {} (finished: {})", who, epoch,
                     counter + 1, counter);
}

}  // namespace canopy
