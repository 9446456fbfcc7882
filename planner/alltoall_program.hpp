// alltoall_program: a planned all-to-all (planner/alltoall.hpp) as a collective-algorithm program (dsl/algorithm.hpp),
// so that the pipeline that runs programs (codegen/lower_program, NVRTC, the runtime's run_program) runs the plan.
// Each ordered pair's block is cut into `chunks` chunks, dealt to the pair's paths in proportion to their shares; a
// chunk crosses the GPUs of its path (switches carry it in hardware), waiting in a scratch chunk of each GPU that
// relays it. docs/planner.md, "All-to-all".
#pragma once

#include <vector>

#include "dsl/algorithm.hpp"
#include "planner/alltoall.hpp"
#include "topology/topology.hpp"

namespace canopy {

// The plan's routes with each pair's shares rounded to multiples of 1 / chunks (largest remainders, the heavier path
// first on a tie; a path left with no chunk is dropped). Throws canopy::Error for chunks < 1.
std::vector<AlltoallPair> rounded_alltoall_routes(const AlltoallPlan& plan, int chunks);

// The fewest chunks a pair, 1 to `max_chunks`, whose rounded routes keep at least `keep` of the plan's rate
// (routes_pair_gbps); `max_chunks` when none does.
int alltoall_program_chunks(const Topology& topology, const AlltoallPlan& plan, double keep = 0.95, int max_chunks = 16);

// The program: goal alltoall over plan.ranks (in that order), `chunks` chunks a pair, the routes of
// rounded_alltoall_routes(plan, chunks). Statements go hop by hop (every first hop, then every second, ...), each on
// the channel of its executor's next GPU, so no channel waits on a later hop. Throws canopy::Error naming the path
// where a GPU that is not a rank would relay (a plan made with `relay`: such relays do not run yet).
algo::Program alltoall_program(const Topology& topology, const AlltoallPlan& plan, int chunks);
// The same at the plan's own chunk count, alltoall_program_chunks(topology, plan): what gen, compile and bench run.
algo::Program alltoall_program(const Topology& topology, const AlltoallPlan& plan);

}  // namespace canopy
