// Recursive halving-doubling allreduce (Rabenseifner) for a power-of-two rank count: every rank copies its input to
// its output; at distances n/2, n/4, ..., 1 each rank keeps one half of its current range and adds the other half
// into its partner's copy (reduce-scatter); then at distances 1, 2, ..., n/2 each rank copies its finished range to
// its partner (allgather). Chunks: one per rank.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "dsl/algorithms/shipped_algorithms.hpp"
#include "core/error.hpp"

namespace canopy::algo {

Program halving_doubling_allreduce(int n) {
  if (n < 1 || (n & (n - 1)) != 0)
    throw Error(fmt::format("halving-doubling allreduce needs a power-of-two rank count, got {}", n));
  Program p("halving-doubling-allreduce", Collective::allreduce, n, n);
  std::vector<int> lo(n, 0), len(n, n);  // each rank's current range of chunks
  for (int r = 0; r < n; ++r) p.input(r, 0, n).copy(p.output(r, 0, n));
  for (int d = n / 2; d >= 1; d /= 2) {
    std::vector<int> keep(n);
    for (int r = 0; r < n; ++r) keep[r] = (r & d) ? lo[r] + len[r] / 2 : lo[r];  // upper half if bit d is set
    for (int r = 0; r < n; ++r) {
      const int partner = r ^ d;
      p.output(r, keep[partner], len[r] / 2).reduce(p.output(partner, keep[partner], len[r] / 2));
    }
    for (int r = 0; r < n; ++r) lo[r] = keep[r], len[r] /= 2;
  }
  for (int d = 1; d < n; d *= 2) {
    for (int r = 0; r < n; ++r) p.output(r, lo[r], len[r]).copy(p.output(r ^ d, lo[r], len[r]));
    std::vector<int> next_lo(n);
    for (int r = 0; r < n; ++r) next_lo[r] = std::min(lo[r], lo[r ^ d]);
    for (int r = 0; r < n; ++r) lo[r] = next_lo[r], len[r] *= 2;
  }
  return p;
}

}  // namespace canopy::algo
