// Schedule::dump(): the schedule as text, one block per lane, in the order the emitter writes them. What
// `canopy gen --dump schedule` and CANOPY_DUMP=schedule show.
#include <fmt/format.h>

#include "codegen/schedule.hpp"

namespace canopy {
namespace {

std::string flag_text(const Schedule& s, FlagRef f) {
  return fmt::format("{}.flag[{}+l]", s.name_of(f.rank), f.index);
}

std::string buffer_text(const Schedule& s, const BufferRef& b) {
  const std::string& rank = s.name_of(b.rank);
  if (b.unit >= 0) return fmt::format("{}.{}[{}]", rank, b.kind == BufferKind::send ? "send" : "recv", b.unit);
  switch (b.kind) {
    case BufferKind::send: return fmt::format("{}.send{}", rank, b.block_local ? "(own block)" : "");
    case BufferKind::recv:
      return fmt::format("{}.recv{}{}", rank, b.block_local ? "(own block)" : "", b.skip_if_source ? "(unless in place)" : "");
    case BufferKind::fifo: return fmt::format("{}.fifo@{}+l*{}", rank, b.fifo_offset, s.fifo_bytes());
  }
  return "?";
}

std::string target_text(const Schedule& s, const Step& step) {
  switch (step.target) {
    case WaitTarget::epoch: return "(e, 0)";
    case WaitTarget::chunk: return "(e, i+1)";
    case WaitTarget::slot_free: return "(e, i+1-depth)";
    case WaitTarget::all: return "(e, n)";
    case WaitTarget::covered:
      return fmt::format("(e, step covering chunk i) of tree {}'s block b, every b", s.lanes[step.dependency].tree);
  }
  return "?";
}

}  // namespace

std::string step_text(const Schedule& s, const Step& step, bool aligned) {
  std::string text;
  switch (step.kind) {
    case StepKind::wait:
      text = fmt::format("wait    {} >= {}", flag_text(s, step.flag), target_text(s, step));
      break;
    case StepKind::sync: return "sync";
    case StepKind::reduce_copy: {
      std::vector<std::string> src, dst;
      for (const BufferRef& b : step.sources) src.push_back(buffer_text(s, b));
      for (const BufferRef& b : step.destinations) dst.push_back(buffer_text(s, b));
      text = fmt::format("{} {} -> {}", step.sources.size() > 1 ? "reduce " : "copy   ", fmt::join(src, " + "),
                         fmt::join(dst, ", "));
      break;
    }
    case StepKind::signal: {
      std::vector<std::string> flags;
      for (FlagRef f : step.flags) flags.push_back(flag_text(s, f));
      text = fmt::format("signal  {} := {}", fmt::join(flags, ", "), step.epoch_only ? "(e, 0)" : "(e, i+1)");
      break;
    }
  }
  if (step.note.empty()) return text;
  if (!aligned) {
    std::string compact;
    for (char ch : text)
      if (!(ch == ' ' && !compact.empty() && compact.back() == ' ')) compact += ch;
    return fmt::format("{} ({})", compact, step.note);
  }
  return fmt::format("{:<60} # {}", text, step.note);
}

namespace {

std::string range_text(const RangeSpec& r) {
  if (r.units > 0) return fmt::format("one chunk = [0, count/{})", r.units);
  std::string text = r.block_of < 0 ? "[0, count)" : fmt::format("block {} = [{}*count, {}*count)", r.block_of,
                                                                   r.block_of, r.block_of + 1);
  for (const RangeSplit& sp : r.splits) text += fmt::format(" | {}..{}/{}", sp.lo, sp.hi, kSplitScale);
  return text;
}

}  // namespace

std::string to_string(LaneRole role) {
  switch (role) {
    case LaneRole::root: return "root";
    case LaneRole::relay: return "relay";
    case LaneRole::leaf: return "leaf";
  }
  return "?";
}

std::string Schedule::dump() const {
  std::string out;
  const CodegenOptions& o = options;
  out += fmt::format(
      "schedule {} on {}: {} ranks on {} devices, {} {}, chunk {} ({} elements), FIFO depth {}, "
      "{} threads per block\n",
      program ? program->name : to_string(plan.collective), plan.topology, ranks, devices.size(), to_string(o.dtype),
      to_string(o.op), format_byte_size(o.chunk_bytes), o.chunk_bytes / size_of(o.dtype), o.fifo_depth,
      o.threads_per_block);
  if (o.pull != PullEdges::none) out += fmt::format("pulled edges: {}\n", to_string(o.pull));
  if (program)
    out += fmt::format(
        "algorithm {} ({}): {} chunks per count, input {} and output {} chunks; {} statements fused "
        "into {} steps\n",
        program->name, program->goal, program->chunks, program->input_chunks, program->output_chunks,
        program->statements, program->steps);
  if (!plan.trees.empty()) out += "trees\n";
  for (std::size_t t = 0; t < plan.trees.size(); ++t) {
    const Tree& tree = plan.trees[t];
    std::vector<std::string> edges;
    for (const TreeEdge& e : tree.edges) edges.push_back(e.from + "->" + e.to);
    out += fmt::format("  tree {:<3} {:<3} root {:<8} fraction {:.6f} weight {:<6} blocks {:<3} {}\n", t,
                       to_string(tree.direction), tree.root, tree.fraction, tree_weights[t], tree_blocks[t],
                       fmt::join(edges, " "));
  }
  out += "ranks\n";
  for (int r = 0; r < ranks; ++r)
    out += fmt::format("  {:<8} device {:<3} scratch {:>10} B  flags {}\n", plan.ranks[r], options.device_of_rank[r],
                       resources[r].scratch_bytes, resources[r].flag_count);
  if (!relays.empty()) out += "relays (forward only: no user buffer)\n";
  for (int r = ranks; r < participants(); ++r)
    out += fmt::format("  {:<8} device {:<3} scratch {:>10} B  flags {}\n", name_of(r), device_of(r),
                       resources[r].scratch_bytes, resources[r].flag_count);
  for (const DeviceSchedule& d : devices) {
    out += fmt::format("device {}: {} blocks\n", d.device, d.blocks);
    int first = 0;
    for (int id : d.lanes) {
      const Lane& lane = lanes[id];
      std::vector<std::string> children;
      for (int c : lane.children) children.push_back(name_of(c));
      if (lane.tree < 0)
        out += fmt::format("  blocks {}-{} = lane {}: {} on {}\n", first, first + lane.blocks - 1, lane.id,
                           lane.channel < 0 ? "no statements" : fmt::format("channel {}", lane.channel),
                           name_of(lane.rank));
      else
        out += fmt::format("  blocks {}-{} = lane {}: tree {} on {}, {}{}{}\n", first, first + lane.blocks - 1, lane.id,
                           lane.tree, name_of(lane.rank), to_string(lane.role),
                           lane.parent >= 0 ? ", parent " + name_of(lane.parent) : "",
                           children.empty() ? "" : fmt::format(", children {}", fmt::join(children, " ")));
      first += lane.blocks;
      out += fmt::format("    range {} | block l of {}\n", range_text(lane.range), lane.blocks);
      auto section = [&](const char* title, const std::vector<Step>& steps) {
        if (steps.empty()) return;
        out += fmt::format("    {}\n", title);
        for (const Step& step : steps) out += fmt::format("      {}\n", step_text(*this, step));
      };
      section("prologue", lane.prologue);
      section("per chunk i", lane.per_chunk);
      section("epilogue", lane.epilogue);
    }
  }
  return out;
}

}  // namespace canopy
