// ApiProfile and the InLibrary guards (api_profile.hpp).
#include "nccl/diagnostics/api_profile.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/env/runtime_env.hpp"

namespace canopy::nccl_api {

namespace {

using Clock = std::chrono::steady_clock;

struct ThreadTime {
  int depth = 0;
  Clock::time_point since{};
  std::uint64_t ns = 0;
};
thread_local ThreadTime t_library;

std::uint64_t ns_between(Clock::time_point a, Clock::time_point b) {
  return b > a ? static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count()) : 0;
}

// A gap longer than this is a pause (a check, a barrier, the next size's set-up), not the program's steady cadence.
constexpr std::uint64_t kPauseNs = 1'000'000;

}  // namespace

bool api_profile_on() {
  static const bool on = [] {
    try {
      return profile_calls_from_environment();
    } catch (...) {
      return false;  // the communicator reports a malformed value at init
    }
  }();
  return on;
}

void InLibrary::enter() {
  if (t_library.depth++ == 0) t_library.since = Clock::now();
}

void InLibrary::leave() {
  if (--t_library.depth == 0) t_library.ns += ns_between(t_library.since, Clock::now());
}

std::uint64_t InLibrary::take(Clock::time_point now) {
  std::uint64_t ns = t_library.ns;
  if (t_library.depth > 0) ns += ns_between(t_library.since, now);
  t_library.ns = 0;
  t_library.since = now;
  return ns;
}

void InLibrary::resume(Clock::time_point now) { t_library.since = now; }

void ApiProfile::begin() {
  start_ = Clock::now();
  library_ns_now_ = InLibrary::take(start_);
}

void ApiProfile::end() {
  const Clock::time_point end = Clock::now();
  InLibrary::resume(end);
  const bool first = last_end_ == Clock::time_point{};
  add(first ? 0 : ns_between(last_end_, start_), library_ns_now_, ns_between(start_, end), first);
  last_end_ = end;
}

void ApiProfile::add(std::uint64_t gap_ns, std::uint64_t library_ns, std::uint64_t run_ns, bool first) {
  if (first || gap_ns > kPauseNs) {
    ++skipped_;
    return;
  }
  ++runs_;
  run_ns_ += run_ns;
  library_ns_ += std::min(library_ns, gap_ns);
  program_ns_ += gap_ns - std::min(library_ns, gap_ns);
}

std::string ApiProfile::report() const {
  const auto per = [&](std::uint64_t ns) { return runs_ ? ns / 1000.0 / static_cast<double>(runs_) : 0.0; };
  return fmt::format("{} collectives ({} after a pause over {} µs or first, left out), host µs per collective: "
                     "Communicator::run {:.2f}, library around it {:.2f}, program between calls {:.2f} = {:.2f}",
                     runs_, skipped_, kPauseNs / 1000, per(run_ns_), per(library_ns_), per(program_ns_),
                     per(run_ns_ + library_ns_ + program_ns_));
}

}  // namespace canopy::nccl_api
