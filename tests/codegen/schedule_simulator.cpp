// ScheduleSimulator: the host model of templates/schedule.cuh (see schedule_simulator.hpp). It repeats the
// device-side range arithmetic on purpose, so a mismatch between lowering and execution shows up here.
#include "tests/codegen/schedule_simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "codegen/lane_range.hpp"

namespace canopy::testing {
namespace {

using Range = ElementRange;

double apply(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return a + b;  // an average combines as a sum, divided once at the end
    case ReduceOp::prod: return a * b;
    case ReduceOp::min: return std::min(a, b);
    case ReduceOp::max: return std::max(a, b);
  }
  return a;
}

struct Block {
  int lane = 0;
  int block = 0;
  Range range;
  std::uint64_t chunks = 0;
  int section = 0;  // 0 prologue, 1 chunks, 2 epilogue, 3 done
  std::uint64_t i = 0;
  std::size_t step = 0;
};

}  // namespace

ScheduleSimulator::ScheduleSimulator(int ranks, std::vector<int> device_of_rank, std::int64_t scratch_elements)
    : scratch_(ranks, std::vector<double>(scratch_elements, 0)), device_of_rank_(std::move(device_of_rank)) {}

int ScheduleSimulator::add_storage(std::vector<double> data) {
  storage_.push_back(std::move(data));
  return static_cast<int>(storage_.size()) - 1;
}

std::string ScheduleSimulator::run(const std::vector<SimLaunch>& launches, std::mt19937_64& rng,
                                   const std::function<void(int, int)>& on_rank_done) {
  const int devices = *std::max_element(device_of_rank_.begin(), device_of_rank_.end()) + 1;
  std::vector<int> launch_of(devices, 0);          // the launch each device runs
  std::vector<std::vector<Block>> blocks(devices);  // of that launch
  std::string error;
  for (const SimLaunch& L : launches)
    if (!flags_.count(L.schedule))
      for (const RankResources& r : L.schedule->resources)
        flags_[L.schedule].push_back(std::vector<std::uint64_t>(r.flag_count, 0));

  auto start = [&](int d) {
    blocks[d].clear();
    if (launch_of[d] >= static_cast<int>(launches.size())) return;
    const SimLaunch& L = launches[launch_of[d]];
    const Schedule& s = *L.schedule;
    const std::uint64_t align = 16 / size_of(s.options.dtype);
    const std::uint64_t chunk = s.options.chunk_bytes / size_of(s.options.dtype);
    for (int id : s.devices[d].lanes) {
      const Lane& lane = s.lanes[id];
      for (int b = 0; b < lane.blocks; ++b) {
        Block blk;
        blk.lane = id;
        blk.block = b;
        blk.range = block_part(tree_range(lane.range, L.count, align), b, lane.blocks, align);
        blk.chunks = (blk.range.size() + chunk - 1) / chunk;
        blocks[d].push_back(blk);
      }
    }
  };
  for (int d = 0; d < devices; ++d) start(d);

  // Resolves a buffer operand to (vector, element index) for chunk c; empty error on success.
  auto element_ref = [&](const SimLaunch& L, const Lane& lane, const Block& blk, const BufferRef& b, Range c,
                          std::uint64_t j, double** out) -> std::string {
    const Schedule& s = *L.schedule;
    const std::int64_t size = size_of(s.options.dtype);
    if (b.kind == BufferKind::fifo) {
      const std::uint64_t chunk = s.options.chunk_bytes / size;
      const std::uint64_t at = (b.fifo_offset + blk.block * s.fifo_bytes()) / size +
                               (blk.i % s.options.fifo_depth) * chunk + j;
      if (at >= scratch_[b.rank].size() ||
          static_cast<std::uint64_t>(b.fifo_offset + (blk.block + 1) * s.fifo_bytes()) >
              static_cast<std::uint64_t>(s.resources[b.rank].scratch_bytes))
        return fmt::format("FIFO access outside rank {}'s scratch", b.rank);
      *out = &scratch_[b.rank][at];
      return "";
    }
    if (b.rank >= static_cast<int>(L.send.size()) || b.rank >= static_cast<int>(L.recv.size()))
      return fmt::format("participant {} (a relay: no user buffer) named as the {} buffer of lane {} (on {})", b.rank,
                         b.kind == BufferKind::send ? "send" : "recv", lane.id, lane.rank);
    const SimBuffer& buf = b.kind == BufferKind::send ? L.send[b.rank] : L.recv[b.rank];
    std::uint64_t at = c.begin + j;
    if (b.block_local) at -= lane.range.block_of * L.count;
    if (b.unit >= 0) at += b.unit * (L.count / lane.range.units);
    std::vector<double>& v = storage_[buf.storage];
    if (buf.offset + at >= v.size())
      return fmt::format("{} buffer of rank {} accessed at element {} past its end", b.kind == BufferKind::send ? "send" : "recv",
                         b.rank, at);
    *out = &v[buf.offset + at];
    return "";
  };

  // Tries to run block `blk`'s next step; returns false when it waits.
  auto step_once = [&](int d, Block& blk, bool execute) -> bool {
    const SimLaunch& L = launches[launch_of[d]];
    const Schedule& s = *L.schedule;
    const Lane& lane = s.lanes[blk.lane];
    std::vector<std::vector<std::uint64_t>>& flags_of = flags_.at(&s);
    const std::uint64_t epoch = static_cast<std::uint64_t>(launch_of[d] + 1) << 32;
    const std::uint64_t align = 16 / size_of(s.options.dtype);
    const std::uint64_t chunk = s.options.chunk_bytes / size_of(s.options.dtype);
    for (;;) {
      if (blk.section == 3) return false;
      const std::vector<Step>& steps = blk.section == 0 ? lane.prologue : blk.section == 1 ? lane.per_chunk : lane.epilogue;
      const bool in_loop = blk.section == 1;
      if (blk.step >= steps.size() || (in_loop && blk.i >= blk.chunks)) {
        if (!execute) return true;
        blk.step = 0;
        if (in_loop && blk.i + 1 < blk.chunks) {
          ++blk.i;
        } else {
          ++blk.section;
          if (blk.section == 2) blk.i = blk.chunks;
          if (blk.section == 1) blk.i = 0;
        }
        continue;
      }
      const Step& step = steps[blk.step];
      const Range c = in_loop ? Range{blk.range.begin + blk.i * chunk, std::min(blk.range.end, blk.range.begin + (blk.i + 1) * chunk)}
                              : Range{};
      if (step.kind == StepKind::wait) {
        auto reached = [&](FlagRef f, int b, std::uint64_t target) { return flags_of[f.rank].at(f.index + b) >= target; };
        bool ok = true;
        if (step.target == WaitTarget::covered) {
          const Lane& dep = s.lanes[step.dependency];
          const Range whole = tree_range(dep.range, L.count, align);
          for (int b = 0; b < dep.blocks && ok; ++b) {
            const Range done = block_part(whole, b, dep.blocks, align);
            if (c.end <= done.begin || c.begin >= done.end) continue;
            const std::uint64_t last = std::min(c.end, done.end) - done.begin;
            ok = reached(step.flag, b, epoch | ((last + chunk - 1) / chunk));
          }
        } else if (step.target != WaitTarget::all || blk.chunks > 0) {
          const std::uint64_t i = blk.i;
          const std::uint64_t depth = s.options.fifo_depth;
          const std::uint64_t target = step.target == WaitTarget::epoch       ? 0
                                       : step.target == WaitTarget::chunk     ? i + 1
                                       : step.target == WaitTarget::slot_free ? (i + 1 > depth ? i + 1 - depth : 0)
                                                                              : blk.chunks;
          ok = reached(step.flag, blk.block, epoch | target);
        }
        if (!ok) return false;
        if (!execute) return true;
      } else if (step.kind == StepKind::reduce_copy) {
        if (!execute) return true;
        for (std::uint64_t j = 0; j < c.size(); ++j) {
          double* p = nullptr;
          if (std::string e = element_ref(L, lane, blk, step.sources[0], c, j, &p); !e.empty()) return error = e, false;
          double* first = p;
          double value = *p;
          for (std::size_t k = 1; k < step.sources.size(); ++k) {
            if (std::string e = element_ref(L, lane, blk, step.sources[k], c, j, &p); !e.empty()) return error = e, false;
            value = apply(s.options.op, value, *p);
          }
          for (const BufferRef& b : step.destinations) {
            if (std::string e = element_ref(L, lane, blk, b, c, j, &p); !e.empty()) return error = e, false;
            if (b.skip_if_source && p == first) continue;
            *p = value;
          }
        }
      } else if (step.kind == StepKind::signal) {
        if (!execute) return true;
        const std::uint64_t value = epoch | (step.epoch_only ? 0 : blk.i + 1);
        for (FlagRef f : step.flags) {
          std::uint64_t& flag = flags_of[f.rank].at(f.index + blk.block);
          if (value < flag) return error = fmt::format("counter {}.{} would go back from {:#x} to {:#x}", f.rank, f.index + blk.block, flag, value), false;
          flag = value;
        }
      } else if (!execute) {
        return true;
      }
      ++blk.step;
      return true;
    }
  };

  for (;;) {
    std::vector<std::pair<int, int>> runnable;  // (device, block)
    bool active = false;
    for (int d = 0; d < devices; ++d) {
      bool all_done = !blocks[d].empty();
      for (std::size_t b = 0; b < blocks[d].size(); ++b) {
        if (blocks[d][b].section != 3) all_done = false;
        if (blocks[d][b].section != 3 && step_once(d, blocks[d][b], false)) runnable.push_back({d, static_cast<int>(b)});
      }
      if (all_done || (blocks[d].empty() && launch_of[d] < static_cast<int>(launches.size()))) {
        for (int r = 0; r < static_cast<int>(device_of_rank_.size()); ++r)  // ranks only: relays hold no output
          if (device_of_rank_[r] == d && launch_of[d] < static_cast<int>(launches.size()) &&
              r < static_cast<int>(launches[launch_of[d]].recv.size()))
            on_rank_done(launch_of[d], r);
        ++launch_of[d];
        start(d);
        d -= 1;  // look at this device's next launch in the same pass
        continue;
      }
      if (!blocks[d].empty()) active = true;
    }
    if (!error.empty()) return error;
    if (!active) return "";
    if (runnable.empty()) {
      std::string stuck = "deadlock:";
      for (int d = 0; d < devices; ++d)
        for (const Block& blk : blocks[d])
          if (blk.section != 3) {
            const Schedule& s = *launches[launch_of[d]].schedule;
            const Lane& lane = s.lanes[blk.lane];
            stuck +=
                fmt::format(" [launch {} device {} tree {} channel {} rank {} block {} section {} chunk {}/{} step {}]",
                            launch_of[d], d, lane.tree, lane.channel, lane.rank, blk.block, blk.section, blk.i,
                            blk.chunks, blk.step);
          }
      return stuck;
    }
    const auto [d, b] = runnable[std::uniform_int_distribution<std::size_t>(0, runnable.size() - 1)(rng)];
    step_once(d, blocks[d][b], true);
    if (!error.empty()) return error;
  }
}

}  // namespace canopy::testing
