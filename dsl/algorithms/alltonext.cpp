// Alltonext, a custom goal (MSCCL's alltonext example): rank r's input goes to rank r+1's output for r < ranks-1;
// rank 0's output is free and rank ranks-1's input goes nowhere. An even rank count of 4 or more is read as 2 hosts
// of g GPUs (ranks 0..g-1, g..2g-1), whose one cross-host hop, rank g-1 to rank g, is cut into g chunks: chunk c
// goes from rank g-1 to local GPU c through scratch, across to its peer g+c, and is gathered onto rank g's output,
// so every GPU pair between the hosts carries a share (chunk 0 skips the gather, chunk g-1 the scatter). Other hops,
// and every hop for an odd count or 2 ranks, are direct copies of the whole buffer. Channels: each rank sends its
// direct copy on channel rank % 2 (a rank's receive and send do not wait on each other), chunk c of the split hop on
// channel 2 + c (all pairs at once).
#include <optional>

#include "dsl/algorithms/shipped_algorithms.hpp"

namespace canopy::algo {

Program alltonext(int n) {
  const bool two_hosts = n >= 4 && n % 2 == 0;
  const int g = two_hosts ? n / 2 : 1;
  const CustomGoal goal{.name = "alltonext", .output = [](int rank, int index) -> std::optional<Contents> {
                          if (rank == 0) return std::nullopt;
                          return Contents{{{rank - 1, index}, 1}};
                        }};
  Program p("alltonext", goal, n, g);
  for (int r = 0; r + 1 < n; ++r) {
    if (!two_hosts || r != g - 1) {
      p.input(r, 0, g).copy(p.output(r + 1, 0, g), Hints{r % 2, {}});
      continue;
    }
    for (int c = 0; c < g; ++c) {  // the cross-host hop, one chunk per GPU pair (c, g + c)
      const Hints h{2 + c, {}};
      Chunk at = p.input(r, c);
      if (c != g - 1) at = at.copy(p.scratch(c, 0), h);
      at = c == 0 ? at.copy(p.output(g, c), h) : at.copy(p.scratch(g + c, 0), h);
      if (c != 0) at.copy(p.output(g, c), h);
    }
  }
  return p;
}

}  // namespace canopy::algo
