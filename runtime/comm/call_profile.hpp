// CallProfile: where a communicator's calls spend the host's time, phase by phase, when CANOPY_PROFILE_CALLS=1
// (CommunicatorConfig::profile_calls; off: one branch per phase). Each call's time from entry to return is cut at
// marks into: entry (the state checks), check (the call's arguments and pointers; across processes also the whole
// call made from this process's part), choose (protocol, kernel spec, the prepared kernel found), launch (arguments
// and the launch itself), stage (copies in and out of the staging area, across processes) and finish (the rest:
// avg's division, return); the lock's wait is left out. The communicator prints the means per call when it is
// destroyed.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

namespace canopy {

class CallProfile {
 public:
  enum Phase { entry, check, choose, launch, stage, finish, kPhases };

  bool on = false;

  void start() {
    if (on) last_ = Clock::now();
  }
  // The time since the last mark (or start) goes to `phase`.
  void mark(Phase phase) {
    if (!on) return;
    const Clock::time_point now = Clock::now();
    ns_[phase] += static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_).count());
    last_ = now;
  }
  void end() {
    if (!on) return;
    mark(finish);
    ++calls_;
  }
  std::uint64_t calls() const { return calls_; }
  // "N calls, µs per call: entry 0.12, check 1.30, ... = total 6.10".
  std::string report() const;

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_{};
  std::array<std::uint64_t, kPhases> ns_{};
  std::uint64_t calls_ = 0;
};

}  // namespace canopy
