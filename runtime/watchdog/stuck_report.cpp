// stuck_report (see stuck_report.hpp).
#include "runtime/watchdog/stuck_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/direct_source.hpp"
#include "codegen/lane_range.hpp"

namespace canopy {

std::vector<std::string> stuck_report(const Schedule& s, std::uint64_t count, std::uint64_t epoch,
                                      const std::vector<std::vector<std::uint64_t>>& flags,
                                      const std::vector<int>& devices, int max_lines) {
  const std::uint64_t elem = static_cast<std::uint64_t>(size_of(s.options.dtype));
  const std::uint64_t align = 16 / elem;
  const std::uint64_t chunk = static_cast<std::uint64_t>(s.options.chunk_bytes) / elem;
  const std::uint64_t e = epoch << 32;
  std::vector<std::string> lines;
  int more = 0;
  for (const Lane& lane : s.lanes) {
    const int device = s.options.device_of_rank[lane.rank];
    if (!devices.empty() && std::find(devices.begin(), devices.end(), device) == devices.end()) continue;
    const std::string lane_text =
        lane.tree >= 0 ? fmt::format("tree {} ({}, root {})", lane.tree, to_string(s.plan.trees[lane.tree].direction),
                                     s.plan.trees[lane.tree].root)
        : lane.channel >= 0 ? fmt::format("channel {}", lane.channel)
                            : std::string("no statements");
    const ElementRange whole = tree_range(lane.range, count, align);
    for (int b = 0; b < lane.blocks; ++b) {
      const std::uint64_t n = chunk_count(block_part(whole, b, lane.blocks, align), chunk);
      for (const std::vector<Step>* section : {&lane.prologue, &lane.per_chunk, &lane.epilogue}) {
        for (const Step& step : *section) {
          if (step.kind != StepKind::wait || step.target == WaitTarget::covered) continue;
          std::uint64_t need = 0;  // the step the block needs by the end of this launch
          switch (step.target) {
            case WaitTarget::epoch: need = 0; break;
            case WaitTarget::chunk:
            case WaitTarget::all: need = n; break;
            case WaitTarget::slot_free:
              need = n + 1 > static_cast<std::uint64_t>(s.options.fifo_depth) ? n - s.options.fifo_depth : 0;
              break;
            case WaitTarget::covered: break;
          }
          if (section == &lane.per_chunk && n == 0) continue;  // no chunks: per-chunk waits never run
          const int index = step.flag.index + b;
          const std::uint64_t value =
              step.flag.rank < static_cast<int>(flags.size()) && index < static_cast<int>(flags[step.flag.rank].size())
                  ? flags[step.flag.rank][index]
                  : 0;
          if (value >= (e | need)) continue;
          if (static_cast<int>(lines.size()) >= max_lines) {
            ++more;
            continue;
          }
          const std::uint64_t at_epoch = value >> 32, at_step = value & 0xffffffffu;
          std::string what;
          if (step.target == WaitTarget::epoch && section == &lane.epilogue)
            what = "the peer has not finished reading my buffer";  // a pulled edge's owner waiting for its reader
          else if (step.target == WaitTarget::epoch)
            what = "the peer has not entered this launch";
          else if (at_epoch < epoch)
            what = fmt::format("nothing has come in this launch (of {} chunks)", n);
          else if (step.target == WaitTarget::slot_free)
            what = fmt::format("a free FIFO slot: {} of {} chunks drained", at_step, n);
          else
            what = fmt::format("chunk {} of {} has not come", at_step + 1, n);
          lines.push_back(fmt::format("GPU {} rank {}, {}, block {}: {} ({}.flag[{}] = (launch {}, step {}): {})",
                                      device, s.plan.ranks[lane.rank], lane_text, b, what, s.plan.ranks[step.flag.rank],
                                      index, at_epoch, at_step, step.note));
        }
      }
    }
  }
  if (more > 0) lines.push_back(fmt::format("... and {} more waits", more));
  return lines;
}

std::vector<std::string> direct_stuck_report(Collective collective, int root, bool two_shot,
                                             const std::vector<std::string>& names,
                                             const std::vector<int>& device_of_rank, int blocks, std::uint64_t epoch,
                                             const std::vector<std::vector<std::uint64_t>>& flags,
                                             const std::vector<int>& devices, int max_lines) {
  const int n = static_cast<int>(names.size());
  const auto value = [&](int rank, int index) {
    return rank < static_cast<int>(flags.size()) && index < static_cast<int>(flags[rank].size()) ? flags[rank][index]
                                                                                                 : 0;
  };
  const char* const use = two_shot                              ? "reading and writing"
                          : collective == Collective::allgather ? "writing"
                                                                : "reading";
  std::vector<std::string> lines;
  int more = 0;
  for (int me = 0; me < n; ++me) {
    if (!devices.empty() && std::find(devices.begin(), devices.end(), device_of_rank[me]) == devices.end()) continue;
    for (int b = 0; b < blocks; ++b) {
      // A block first waits for the ranks it reads to enter, then for the ranks reading it to be done: the first
      // word short of this launch is what it waits for now.
      std::string what;
      int index = -1;
      for (int q = 0; q < n && index < 0; ++q)
        if (direct_reads(collective, root, me, q, two_shot) &&
            value(me, direct_entered_index(n, blocks, q, b)) < epoch) {
          index = direct_entered_index(n, blocks, q, b);
          what = fmt::format("the peer has not entered this launch ({} entered", names[q]);
        }
      for (int q = 0; q < n && index < 0; ++q)
        if (direct_reads(collective, root, q, me, two_shot) && value(me, direct_done_index(n, blocks, q, b)) < epoch) {
          index = direct_done_index(n, blocks, q, b);
          what = fmt::format("the peer has not finished {} my buffer ({} done", use, names[q]);
        }
      if (index < 0) continue;
      if (static_cast<int>(lines.size()) >= max_lines) {
        ++more;
        continue;
      }
      lines.push_back(fmt::format("GPU {} rank {}, direct {}, block {}: {}: {}.flag[{}] = launch {})",
                                  device_of_rank[me], names[me], to_string(collective), b, what, names[me], index,
                                  value(me, index)));
    }
  }
  if (more > 0) lines.push_back(fmt::format("... and {} more waits", more));
  return lines;
}

}  // namespace canopy
