// bench/planner: planning quality and speed. For each topology and collective: predicted algbw, the proven bound,
// their ratio, tree count (and its lower bound), and planning time (best of several runs). Plain program, not a
// timed test: `build/bin/canopy-bench-planner [--quick]`.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "dsl/shipped_topologies.hpp"
#include "planner/planner.hpp"

using namespace canopy;

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::vector<std::string> names = {"dgx1-v100", "dgx1-p100", "dgx2", "hgx-h200", "h200x2", "pcie-4gpu"};
  if (argc > 1 && !quick) names.assign(argv + 1, argv + argc);
  const Collective all[] = {Collective::broadcast, Collective::reduce, Collective::allgather, Collective::reducescatter,
                            Collective::allreduce};
  fmt::print("{:<14} {:<14} {:>10} {:>10} {:>8} {:>6} {:>6} {:>10}\n", "topology", "collective", "algbw", "bound",
             "ratio", "trees", "lower", "plan ms");
  for (const auto& name : names) {
    const Topology t = load_topology(name);
    for (Collective c : all) {
      double best_ms = 1e300;
      Plan p;
      PlanReport rep;
      for (int run = 0; run < (quick ? 1 : 3); ++run) {
        const auto start = std::chrono::steady_clock::now();
        p = plan(t, c, {}, &rep);
        best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      }
      fmt::print("{:<14} {:<14} {:>10.3f} {:>10.3f} {:>8.5f} {:>6} {:>6} {:>10.2f}\n", name, to_string(c), p.algbw_gbps,
                 p.bound_algbw_gbps, p.algbw_gbps / p.bound_algbw_gbps, p.trees.size(), rep.tree_lower_bound, best_ms);
    }
  }
}
