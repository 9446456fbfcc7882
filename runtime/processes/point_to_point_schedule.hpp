// PointToPointSchedule: the order of one process's side stream for each group of sends and receives across processes
// (ProcessPointToPoint), as steps on the processes' `staged` and `read` words: wait until every process that read
// this process's staging regions in an earlier group has read them (its `read` word), copy this group's sends in,
// write `staged`; wait for `staged` of every process it receives from, copy the receives out, write `read`. Every
// process counts the groups alike (each word's values). Pure, so the schedules of several processes are run against
// each other in any interleaving on any CPU (no deadlock; every copy out reads the group its sender staged).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "runtime/processes/point_to_point_exchange.hpp"

namespace canopy {

struct PointToPointStep {
  enum class Kind { wait_read, copy_in, write_staged, wait_staged, copy_out, write_read };
  Kind kind = Kind::copy_in;
  int process = 0;          // the process whose word a wait reads (a write's: this one)
  std::uint32_t value = 0;  // the group a wait waits for (cyclically: reached or passed), or a write writes
};

class PointToPointSchedule {
 public:
  explicit PointToPointSchedule(int processes) : last_read_(processes, 0), waited_read_(processes, 0) {}

  // The steps of this process (`self`) for its next group, planned as `plan`; empty where it moves nothing across
  // processes. Every process calls it for every group, in the same order.
  std::vector<PointToPointStep> next(const PointToPointPlan& plan, int self);
  // Groups counted so far (from any thread).
  std::uint32_t groups() const { return groups_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint32_t> groups_{0};
  // Per process: the last group in which it read this process's staging regions, and the value this process last
  // waited for on its `read` word (a wait already queued needs no repeat).
  std::vector<std::uint32_t> last_read_, waited_read_;
};

}  // namespace canopy
