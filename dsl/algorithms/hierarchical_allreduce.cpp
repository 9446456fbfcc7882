// Hierarchical allreduce for 2 hosts of g GPUs each (ranks 0..g-1 on host 0, g..2g-1 on host 1; chunk l belongs
// to local rank l): each host reduces chunk l onto its local rank l (intra-host reduce-scatter, all-to-one), the
// two owners of chunk l swap their partial sums across the hosts through scratch and add them (one inter-host
// transfer per chunk each way, as the hosts' NICs pair up), then each owner copies the result to its host's peers
// (intra-host allgather).
#include <fmt/format.h>

#include "dsl/algorithms/shipped_algorithms.hpp"
#include "core/error.hpp"

namespace canopy::algo {

Program hierarchical_allreduce(int n) {
  if (n < 2 || n % 2 != 0)
    throw Error(fmt::format("the 2-host hierarchical allreduce needs an even rank count (two hosts), got {}", n));
  const int g = n / 2;
  Program p("hierarchical-allreduce", Collective::allreduce, n, g);
  auto rank = [g](int host, int local) { return host * g + local; };
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < g; ++l) {
      const int owner = rank(h, l);
      p.input(owner, l).copy(p.output(owner, l));
      for (int q = 0; q < g; ++q)
        if (q != l) p.input(rank(h, q), l).reduce(p.output(owner, l), Hints{q, {}});
    }
  for (int l = 0; l < g; ++l) {
    const int a = rank(0, l), b = rank(1, l);
    p.output(a, l).copy(p.scratch(b, 0));  // both partial sums cross before either is overwritten
    p.output(b, l).copy(p.scratch(a, 0));
    p.scratch(b, 0).reduce(p.output(b, l));
    p.scratch(a, 0).reduce(p.output(a, l));
  }
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < g; ++l)
      for (int q = 0; q < g; ++q)
        if (q != l) p.output(rank(h, l), l).copy(p.output(rank(h, q), l), Hints{q, {}});
  return p;
}

}  // namespace canopy::algo
