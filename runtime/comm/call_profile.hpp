// CallProfile: where a communicator's calls spend the host's time, phase by phase, when CANOPY_PROFILE_CALLS=1
// (CommunicatorConfig::profile_calls; off: one branch per phase). Each call's time from entry to return is cut at
// marks into: entry (the state checks), check (the call's arguments and pointers; across processes also the whole
// call made from this process's part), choose (protocol, kernel spec, the prepared kernel found), launch (arguments,
// stream order, what follows the launch), api (the CUDA launch call itself, timed around it where the caller's thread
// launches: moved out of launch with `shift`), stage (copies in and out of the staging area, across processes) and
// finish (the rest: avg's division, return); the lock's wait is left out. Calls over cold_ns in all (a first call
// compiles or loads its kernel) are counted apart, so the means are those of calls in steady state. The communicator
// prints the means per call when it is destroyed.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <string>

namespace canopy {

class CallProfile {
 public:
  enum Phase { entry, check, choose, launch, api, stage, finish, kPhases };
  static constexpr std::uint64_t kColdNs = 100'000;  // 100 µs: no call in steady state takes the host that long

  bool on = false;
  std::uint64_t cold_ns = kColdNs;

  void start() {
    if (!on) return;
    last_ = Clock::now();
    call_ = {};
  }
  // The time since the last mark (or start) goes to `phase`.
  void mark(Phase phase) {
    if (!on) return;
    const Clock::time_point now = Clock::now();
    call_[phase] +=
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_).count());
    last_ = now;
  }
  // Moves `ns` already charged to `from` to `to` (a part timed inside a phase).
  void shift(Phase from, Phase to, std::uint64_t ns) {
    if (!on) return;
    ns = std::min(ns, call_[from]);
    call_[from] -= ns;
    call_[to] += ns;
  }
  void end() {
    if (!on) return;
    mark(finish);
    std::uint64_t total = 0;
    for (std::uint64_t t : call_) total += t;
    if (total > cold_ns) {
      ++cold_;
      return;
    }
    for (int p = 0; p < kPhases; ++p) ns_[p] += call_[p];
    ++calls_;
  }
  std::uint64_t calls() const { return calls_; }  // those in steady state
  std::uint64_t cold() const { return cold_; }    // those over cold_ns, left out of the means
  // "N calls (K over 100 µs left out: ...), host µs per call: entry 0.04 check 0.96 ... api 4.35 ... = 6.10".
  std::string report() const;

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_{};
  std::array<std::uint64_t, kPhases> call_{};  // this call's
  std::array<std::uint64_t, kPhases> ns_{};
  std::uint64_t calls_ = 0;
  std::uint64_t cold_ = 0;
};

}  // namespace canopy
