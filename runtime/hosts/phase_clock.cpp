// Events between a multi-host call's phases and their times in the log (phase_clock.hpp).
#include "runtime/hosts/phase_clock.hpp"

#include <fmt/format.h>

namespace canopy {

PhaseClock::PhaseClock(const Logger& log, cudaStream_t stream, std::string call)
    : log_(log), stream_(stream), call_(std::move(call)), on_(log.enabled(LogLevel::info, LogSubsys::run)) {
  mark("start");
}

PhaseClock::~PhaseClock() {
  for (auto& [name, e] : marks_) (void)cudaEventDestroy(e);
}

void PhaseClock::mark(const std::string& phase) {
  if (!on_) return;
  cudaEvent_t e = nullptr;
  if (cudaEventCreate(&e) != cudaSuccess || cudaEventRecord(e, stream_) != cudaSuccess) {
    (void)cudaGetLastError();
    if (e) (void)cudaEventDestroy(e);
    on_ = false;  // no timing, the call goes on
    return;
  }
  marks_.emplace_back(phase, e);
}

void PhaseClock::report() {
  if (!on_ || marks_.size() < 2) return;
  if (cudaEventSynchronize(marks_.back().second) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  std::string line = call_ + ":";
  float total = 0;
  for (std::size_t i = 1; i < marks_.size(); ++i) {
    float ms = 0;
    (void)cudaEventElapsedTime(&ms, marks_[i - 1].second, marks_[i].second);
    total += ms;
    line += fmt::format("{} {} {:.3f} ms", i > 1 ? "," : "", marks_[i].first, ms);
  }
  log_.info(LogSubsys::run, line + fmt::format("; {:.3f} ms in all", total));
}

}  // namespace canopy
