// The watchdog's rules, apart from the CUDA queries that feed them, so they are tested on any CPU
// (tests/runtime/watchdog/watch_rules_test.cpp): how often it looks, and what it does with its oldest launch each time
// it looks. Launches are watched in order: a later launch waits behind an unfinished one. Also how another process's
// launch counter reads, for a report across processes.
#pragma once

#include <cstdint>
#include <string>

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

// What another process's launch counter says of the stuck launch `epoch` (every process counts the launches of a
// kind alike; templates/flags.cuh): while the host gives the epochs (`device_epochs` false), `counter` is the last
// launch the process's kernel entered; once calls were captured into CUDA graphs, the launches it finished. `who`
// names the process. E.g. "process 1 (rank 1, pid 4242 on host box) has not entered launch 11 (the last it entered:
// launch 10)".
std::string peer_progress(const std::string& who, std::uint64_t counter, std::uint64_t epoch, bool device_epochs);

}  // namespace canopy
