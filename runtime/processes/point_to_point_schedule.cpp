// PointToPointSchedule (see point_to_point_schedule.hpp).
#include "runtime/processes/point_to_point_schedule.hpp"

namespace canopy {

std::vector<PointToPointStep> PointToPointSchedule::next(const PointToPointPlan& plan, int self) {
  using Kind = PointToPointStep::Kind;
  const std::uint32_t group = groups_.fetch_add(1, std::memory_order_relaxed) + 1;
  // This group's readers are waited for by a later group's sends, not by this one's.
  const std::vector<std::uint32_t> earlier = last_read_;
  for (std::size_t q = 0; q < plan.readers.size(); ++q)
    if (plan.readers[q]) last_read_[q] = group;
  std::vector<PointToPointStep> steps;
  if (!plan.sends.empty()) {
    for (std::size_t q = 0; q < earlier.size(); ++q) {
      if (earlier[q] == 0 || earlier[q] == waited_read_[q]) continue;
      steps.push_back({Kind::wait_read, static_cast<int>(q), earlier[q]});
      waited_read_[q] = earlier[q];
    }
    steps.push_back({Kind::copy_in, self, group});
    steps.push_back({Kind::write_staged, self, group});
  }
  if (!plan.receives.empty()) {
    for (std::size_t q = 0; q < plan.reads_from.size(); ++q)
      if (plan.reads_from[q]) steps.push_back({Kind::wait_staged, static_cast<int>(q), group});
    steps.push_back({Kind::copy_out, self, group});
    steps.push_back({Kind::write_read, self, group});
  }
  return steps;
}

}  // namespace canopy
