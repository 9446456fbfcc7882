// A program's statements as sorted tuples (kind, src rank/buffer/index, dst rank/buffer/index, count): equal when two
// programs do the same work, whatever their order; for round-trip tests of MSCCL-IR import and export.
#pragma once

#include <algorithm>
#include <tuple>
#include <vector>

#include "dsl/algorithm.hpp"

namespace canopy::algo {

inline std::vector<std::tuple<int, int, int, int, int, int, int, int>> statements(const Program& p) {
  std::vector<std::tuple<int, int, int, int, int, int, int, int>> out;
  for (const Op& op : p.ops())
    out.push_back({static_cast<int>(op.kind), op.src.rank, static_cast<int>(op.src.buffer), op.src.index, op.dst.rank,
                   static_cast<int>(op.dst.buffer), op.dst.index, op.src.count});
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace canopy::algo
