// The watchdog's rules, apart from the CUDA queries that feed them, so they are tested on any CPU
// (tests/runtime/watchdog/watch_rules_test.cpp): how often it looks, and what it does with its oldest launch each time
// it looks. Launches are watched in order: a later launch waits behind an unfinished one.
#pragma once

namespace canopy {

// Seconds between looks: a tenth of the limit, at most 0.1 s.
double watch_poll_seconds(double limit_seconds);

enum class WatchAction {
  forget,                // finished before the limit: drop it and look at the next launch
  forget_after_report,   // finished after being reported stuck: say so, drop it, look at the next
  report_stuck,          // unfinished past the limit, not reported yet: report it once, then wait
  wait,                  // unfinished: look again later (later launches wait behind it)
};

// The oldest launch, `finished` on every GPU or not, `reported` stuck before, `age` seconds after its launch.
WatchAction watch_action(bool finished, bool reported, double age_seconds, double limit_seconds);

}  // namespace canopy
