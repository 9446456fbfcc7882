// AlltoallPrograms (alltoall_programs.hpp): the plan made once, a program per chunk count.
#include "runtime/comm/alltoall_programs.hpp"

#include "planner/alltoall_program.hpp"
#include "planner/planner.hpp"

namespace canopy {

int AlltoallPrograms::chunks_for(int planned_chunks, std::uint64_t per_peer) {
  for (int c = planned_chunks; c > 1; --c)
    if (per_peer % static_cast<std::uint64_t>(c) == 0) return c;
  return 1;
}

const algo::Program& AlltoallPrograms::program(const Topology& topology, const std::vector<std::string>& ranks,
                                               std::uint64_t per_peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ranks.size() == 1) {  // nothing to route: the one block is a local copy
    std::unique_ptr<algo::Program>& p = by_chunks_[1];
    if (!p) {
      p = std::make_unique<algo::Program>("planned-alltoall", algo::AllToAll{}, 1, 1);
      p->input(0, 0).copy(p->output(0, 0));
    }
    return *p;
  }
  if (!plan_) {
    PlanOptions options;
    options.gpus = ranks;
    plan_ = plan_alltoall(topology, options);
    planned_chunks_ = alltoall_program_chunks(topology, *plan_);
  }
  const int chunks = chunks_for(planned_chunks_, per_peer);
  std::unique_ptr<algo::Program>& p = by_chunks_[chunks];
  if (!p) p = std::make_unique<algo::Program>(alltoall_program(topology, *plan_, chunks));
  return *p;
}

}  // namespace canopy
