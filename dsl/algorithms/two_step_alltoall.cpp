// Two-step alltoall for 2 hosts of g GPUs each (MSCCL's hierarchical all-to-all; ranks 0..g-1 on host 0, g..2g-1 on
// host 1): step 1 gathers, inside each host, the chunks bound for the other host onto the GPU paired with each
// remote peer (local l collects in its scratch what every local GPU sends to remote l); step 2 sends those g chunks
// across in one transfer per GPU pair, straight into the peer's output; chunks that stay inside a host are copied
// directly. Channels: step 1 and the direct copies run on the destination's local index (copies to different peers
// in parallel), step 2 on channel g + host (both directions of a pair at once). Chunks: one per (source, destination).
#include <fmt/format.h>

#include "dsl/algorithms/shipped_algorithms.hpp"
#include "core/error.hpp"

namespace canopy::algo {

Program two_step_alltoall(int n) {
  if (n < 2 || n % 2 != 0)
    throw Error(fmt::format("the 2-host two-step alltoall needs an even rank count (two hosts), got {}", n));
  const int g = n / 2;
  Program p("two-step-alltoall", AllToAll{}, n, 1);
  auto rank = [g](int host, int local) { return host * g + local; };
  for (int h = 0; h < 2; ++h)  // step 1: scratch[l1] of (h, l2) holds what (h, l1) sends to (other host, l2)
    for (int l1 = 0; l1 < g; ++l1)
      for (int l2 = 0; l2 < g; ++l2)
        p.input(rank(h, l1), rank(1 - h, l2)).copy(p.scratch(rank(h, l2), l1), Hints{l2, {}});
  for (int h = 0; h < 2; ++h)  // step 2: one transfer of g chunks per pair, to outputs (h, 0..g-1) of the peer
    for (int l = 0; l < g; ++l)
      p.scratch(rank(h, l), 0, g).copy(p.output(rank(1 - h, l), rank(h, 0), g), Hints{g + h, {}});
  for (int r = 0; r < n; ++r)  // inside a host: direct
    for (int l = 0; l < g; ++l) {
      const int q = rank(r / g, l);
      p.input(r, q).copy(p.output(q, r), Hints{l, {}});
    }
  return p;
}

}  // namespace canopy::algo
