// All-pairs allgather: every rank copies its input straight to its slot of every rank's output, the copies to each
// destination on a channel of their own (one hop each: needs links between all pairs, as on NVSwitch machines).
#include "dsl/algorithms/shipped_algorithms.hpp"

namespace canopy::algo {

Program allpairs_allgather(int n) {
  Program p("allpairs-allgather", Collective::allgather, n, 1);
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < n; ++q) p.input(r, 0).copy(p.output(q, r), Hints{q, {}});
  return p;
}

}  // namespace canopy::algo
