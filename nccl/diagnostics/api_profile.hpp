// ApiProfile: under CANOPY_PROFILE_CALLS=1, where the host's time goes between the collectives a SharedComm runs,
// beside the Communicator's own profile of each run (runtime/comm/call_profile.hpp). Each run's time splits into:
// inside Communicator::run; inside this library's entry points around it (ncclGroupStart/End, the collectives' checks,
// the group's posting and waiting: every served entry point holds an InLibrary guard); and outside the library since
// the run before (the program's own work between its calls). For nccl-tests -g 2, whose eager calls took 25-30 µs where
// Communicator::run took 10.5 (2026-11-27), this says which side the rest is on. Printed when the SharedComm goes. The
// guards cost one branch when the profile is off. The split itself is pure (ApiProfile::add), tested on any CPU.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace canopy::nccl_api {

// Whether CANOPY_PROFILE_CALLS=1 (read once).
bool api_profile_on();

// Held by every served entry point: the thread's time inside the library (nested guards count once).
class InLibrary {
 public:
  InLibrary() {
    if (api_profile_on()) enter();
  }
  ~InLibrary() {
    if (api_profile_on()) leave();
  }
  InLibrary(const InLibrary&) = delete;
  InLibrary& operator=(const InLibrary&) = delete;

  // The thread's time inside the library since the last take (an open guard counts up to `now`, and counts on from
  // `now` after): for ApiProfile::begin.
  static std::uint64_t take(std::chrono::steady_clock::time_point now);
  // For ApiProfile::end: an open guard counts on from `now` (the run's own time is not the library's).
  static void resume(std::chrono::steady_clock::time_point now);

 private:
  static void enter();
  static void leave();
};

class ApiProfile {
 public:
  // Around Communicator::run, on the thread that runs it: begin() before, end() after (the gap since the last end, the
  // library's share of it from the InLibrary guards, the run itself).
  void begin();
  void end();
  // One run: `gap_ns` since the end of the run before (0 for the first), of which `library_ns` inside the library's
  // entry points; `run_ns` inside Communicator::run.
  void add(std::uint64_t gap_ns, std::uint64_t library_ns, std::uint64_t run_ns, bool first);
  std::uint64_t runs() const { return runs_; }
  // "N collectives (K after a pause over 1000 µs or first, left out), host µs per collective: Communicator::run R,
  // library around it L, program between calls P = T" (api_profile_test.cpp shows it with figures).
  std::string report() const;

 private:
  std::chrono::steady_clock::time_point start_{}, last_end_{};  // this run's start; the last run's end (none: epoch)
  std::uint64_t library_ns_now_ = 0;                             // the library's time before this run
  std::uint64_t runs_ = 0, skipped_ = 0;
  std::uint64_t run_ns_ = 0, library_ns_ = 0, program_ns_ = 0;
};

}  // namespace canopy::nccl_api
