// Ring allreduce: the buffer is cut into one chunk per rank; chunk i is reduced around the ring starting at rank i +
// 1 and ending at rank i (each hop copies the partial sum to the next rank's output and adds that rank's input), then
// the finished chunk travels once more around the ring to every other rank's output.
#include "dsl/algorithms/shipped_algorithms.hpp"

namespace canopy::algo {

Program ring_allreduce(int n) {
  Program p("ring-allreduce", Collective::allreduce, n, n);
  if (n == 1) {
    p.input(0, 0).copy(p.output(0, 0));
    return p;
  }
  for (int i = 0; i < n; ++i) {
    const Hints h{i % 2, {}};                          // two channels: neighbouring chunks overlap
    auto at = [&](int s) { return (i + 1 + s) % n; };  // ring position s of chunk i's trip
    Chunk acc = p.input(at(0), i).copy(p.output(at(1), i), h);
    acc = p.input(at(1), i).reduce(acc, h);
    for (int s = 2; s < n; ++s) {
      acc = acc.copy(p.output(at(s), i), h);
      acc = p.input(at(s), i).reduce(acc, h);
    }
    for (int s = 0; s + 1 < n; ++s) acc = acc.copy(p.output(at(s), i), h);  // allgather: i -> i+1 -> ... -> i-1
  }
  return p;
}

}  // namespace canopy::algo
