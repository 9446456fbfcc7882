// The CUDA emitter: writes a Schedule as one translation unit over templates/canopy.cuh (see emit_cuda.hpp).
#include "codegen/emit_cuda.hpp"

#include <fmt/format.h>

#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "core/sha256.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "planner/plan_json.hpp"

namespace canopy {
namespace {

std::string chunk_tag(std::int64_t bytes) {
  if (bytes % (1024 * 1024) == 0) return fmt::format("{}m", bytes / (1024 * 1024));
  if (bytes % 1024 == 0) return fmt::format("{}k", bytes / 1024);
  return fmt::format("{}b", bytes);
}

// "gpu0[gpu1[gpu5] gpu3]": a tree as nested children lists.
std::string tree_text(const Schedule& s, int t) {
  std::map<std::string, std::vector<std::string>> children;
  for (const TreeEdge& e : s.plan.trees[t].edges) {
    if (s.plan.trees[t].direction == TreeDirection::out) children[e.from].push_back(e.to);
    else children[e.to].push_back(e.from);
  }
  std::function<std::string(const std::string&)> text = [&](const std::string& v) {
    auto it = children.find(v);
    if (it == children.end()) return v;
    std::vector<std::string> parts;
    for (const std::string& c : it->second) parts.push_back(text(c));
    return fmt::format("{}[{}]", v, fmt::join(parts, " "));
  };
  return text(s.plan.trees[t].root);
}

std::string range_rec(const RangeSpec& spec) {
  if (spec.units > 0) return fmt::format("{{-1, 0, {{0, 0}}, {{0, 0}}, {}}}", spec.units);
  std::vector<RangeSplit> splits;
  for (const RangeSplit& sp : spec.splits)
    if (!(sp.lo == 0 && sp.hi == kSplitScale)) splits.push_back(sp);
  CANOPY_INTERNAL_ASSERT(splits.size() <= 2, "a tree range with more than two splits");
  std::int64_t lo[2] = {0, 0}, hi[2] = {kSplitScale, kSplitScale};
  for (std::size_t k = 0; k < splits.size(); ++k) lo[k] = splits[k].lo, hi[k] = splits[k].hi;
  return fmt::format("{{{}, {}, {{{}, {}}}, {{{}, {}}}}}", spec.block_of, splits.size(), lo[0], lo[1], hi[0], hi[1]);
}

const char* wait_until(WaitTarget t) {
  switch (t) {
    case WaitTarget::epoch: return "kUntilEpoch";
    case WaitTarget::chunk: return "kUntilChunk";
    case WaitTarget::slot_free: return "kUntilSlotFree";
    case WaitTarget::all: return "kUntilAll";
    case WaitTarget::covered: return "kUntilCovered";
  }
  return "?";
}

const char* step_kind(StepKind k) {
  switch (k) {
    case StepKind::wait: return "kWait";
    case StepKind::sync: return "kSync";
    case StepKind::reduce_copy: return "kReduceCopy";
    case StepKind::signal: return "kSignal";
  }
  return "?";
}

std::string buffer_rec(const BufferRef& b) {
  const char* kind = b.kind == BufferKind::send ? "kSend" : b.kind == BufferKind::recv ? "kRecv" : "kFifo";
  if (b.unit >= 0) return fmt::format("{{{}, kUnit, {}, 0, {}}}", kind, b.rank, b.unit);
  const char* mode = b.block_local ? "kBlockLocal" : b.skip_if_source ? "kUnlessSource" : "kWhole";
  return fmt::format("{{{}, {}, {}, {}}}", kind, mode, b.rank, b.fifo_offset);
}

// The tables of one device: lanes, steps, buffers, flags, blocks (templates/schedule.cuh).
struct Tables {
  std::string lanes, steps, buffers, flags, blocks;
  int buffer_count = 0, flag_count = 0, block_count = 0;
  std::set<std::pair<int, int>> shapes;  // reduce_copy (sources, destinations) in use
  int max_sources = 1, max_destinations = 1;
};

void add_steps(Tables& t, const Schedule& s, const std::map<int, int>& local, const std::vector<Step>& steps,
               const char* section) {
  for (const Step& step : steps) {
    int first = 0, sources = 0, destinations = 0, flags = 0, dependency = -1;
    FlagRef flag;
    if (step.kind == StepKind::wait) {
      flag = step.flag;
      if (step.target == WaitTarget::covered) dependency = local.at(step.dependency);
    } else if (step.kind == StepKind::reduce_copy) {
      first = t.buffer_count;
      sources = static_cast<int>(step.sources.size());
      destinations = static_cast<int>(step.destinations.size());
      for (const BufferRef& b : step.sources) t.buffers += fmt::format("    {},\n", buffer_rec(b));
      for (const BufferRef& b : step.destinations) t.buffers += fmt::format("    {},\n", buffer_rec(b));
      t.buffer_count += sources + destinations;
      t.shapes.insert({sources, destinations});
      t.max_sources = std::max(t.max_sources, sources);
      t.max_destinations = std::max(t.max_destinations, destinations);
    } else if (step.kind == StepKind::signal) {
      first = t.flag_count;
      flags = static_cast<int>(step.flags.size());
      for (FlagRef f : step.flags) t.flags += fmt::format("    {{{}, {}}},\n", f.rank, f.index);
      t.flag_count += flags;
    }
    CANOPY_INTERNAL_ASSERT(t.buffer_count < 65536 && t.flag_count < 65536, "step tables over 16-bit indices");
    // The comment goes above its row: a trailing comment past the column limit makes libFormat break the row.
    t.steps += fmt::format("    // {}: {}\n", section, step_text(s, step, /*aligned=*/false));
    t.steps += fmt::format("    {{{}, {}, {}, {}, {}, {}, {}, {{{}, {}}}, {}}},\n", step_kind(step.kind),
                           wait_until(step.target), sources, destinations, flags, first, step.epoch_only ? 1 : 0,
                           flag.rank, flag.index, dependency);
  }
}

Tables device_tables(const Schedule& s, const DeviceSchedule& d) {
  Tables t;
  std::map<int, int> local;  // schedule lane id -> row in this device's lane table
  for (std::size_t k = 0; k < d.lanes.size(); ++k) local[d.lanes[k]] = static_cast<int>(k);
  int step_count = 0, first_block = 0;
  for (std::size_t k = 0; k < d.lanes.size(); ++k) {
    const Lane& lane = s.lanes[d.lanes[k]];
    const int steps = static_cast<int>(lane.prologue.size() + lane.per_chunk.size() + lane.epilogue.size());
    if (lane.tree < 0) {
      const std::string what = lane.channel < 0 ? "no statements" : fmt::format("channel {}", lane.channel);
      t.lanes += fmt::format("    // lane {}: {} on {}; blocks {}-{}\n", k, what, s.name_of(lane.rank), first_block,
                             first_block + lane.blocks - 1);
      t.steps += fmt::format("    // lane {}: {} on {}\n", k, what, s.name_of(lane.rank));
    } else {
      const Tree& tree = s.plan.trees[lane.tree];
      std::vector<std::string> children;
      for (int c : lane.children) children.push_back(s.name_of(c));
      t.lanes += fmt::format("    // lane {}: tree {} ({}, root {}) on {}: {}{}{}; blocks {}-{}\n", k, lane.tree,
                             to_string(tree.direction), tree.root, s.name_of(lane.rank), to_string(lane.role),
                             lane.parent >= 0 ? ", parent " + s.name_of(lane.parent) : "",
                             children.empty() ? "" : fmt::format(", children {}", fmt::join(children, " ")),
                             first_block, first_block + lane.blocks - 1);
      t.steps += fmt::format("    // lane {}: tree {} on {}\n", k, lane.tree, s.name_of(lane.rank));
    }
    t.lanes += fmt::format("    {{{}, {}, {}, {}, {}, {}}},\n", range_rec(lane.range), lane.blocks, step_count,
                           lane.prologue.size(), lane.per_chunk.size(), lane.epilogue.size());
    CANOPY_INTERNAL_ASSERT(step_count + steps < 65536 && lane.per_chunk.size() < 65536, "step table too large");
    add_steps(t, s, local, lane.prologue, "prologue");
    add_steps(t, s, local, lane.per_chunk, "chunk i");
    add_steps(t, s, local, lane.epilogue, "epilogue");
    step_count += steps;
    for (int b = 0; b < lane.blocks; ++b) {
      t.blocks += fmt::format("{}{{{}, {}}},", t.block_count % 12 == 0 ? "\n    " : " ", k, b);
      ++t.block_count;
    }
    first_block += lane.blocks;
  }
  if (t.buffer_count == 0) t.buffers = "    {kSend, kWhole, 0, 0},  // (unused)\n";
  if (t.flag_count == 0) t.flags = "    {0, 0},  // (unused)\n";
  return t;
}

// The banner of a program schedule (codegen/lower_program.hpp): what it was lowered from instead of trees.
std::string program_banner(const Schedule& s, const std::vector<std::string>& placed) {
  const ProgramSummary& a = *s.program;
  const CodegenOptions& o = s.options;
  int channels = 0;
  for (const Lane& lane : s.lanes) channels = std::max(channels, lane.channel + 1);
  std::string out =
      fmt::format("// algorithm    {} ({}) over {} ranks: {}\n", a.name, a.goal, s.ranks, fmt::join(placed, " "));
  out += fmt::format("// elements     {}{}\n", to_string(o.dtype), a.reduces ? ", op " + to_string(o.op) : "");
  out += fmt::format("// buffers      {} chunks per count: input {} chunks, output {} chunks per rank\n", a.chunks,
                     a.input_chunks, a.output_chunks);
  out += fmt::format(
      "// slices       {} ({} elements) of every chunk per step; scratch rings of {} slices; {} threads "
      "per block\n",
      format_byte_size(o.chunk_bytes), o.chunk_bytes / size_of(o.dtype), o.fifo_depth, o.threads_per_block);
  out += fmt::format(
      "// program      {} single-chunk statements fused into {} steps on {} lanes ({} channels), {} "
      "blocks each (see docs/algorithms.md)\n",
      a.statements, a.steps, s.lanes.size(), channels, s.lanes.empty() ? 0 : s.lanes[0].blocks);
  return out;
}

// The banner lines of a tree schedule: collective, shape, rate and every tree.
std::string tree_banner(const Schedule& s, const std::vector<std::string>& placed) {
  const Plan& p = s.plan;
  const CodegenOptions& o = s.options;
  std::string out;
  out += fmt::format("// collective   {} over {} ranks{}: {}\n", to_string(p.collective), s.ranks,
                     p.root ? ", root " + *p.root : "", fmt::join(placed, " "));
  out += fmt::format("// elements     {}{}\n", to_string(o.dtype), reduces(p.collective) ? ", op " + to_string(o.op) : "");
  out += fmt::format("// chunk        {} ({} elements) per lane step; FIFO depth {}; {} threads per block\n",
                     format_byte_size(o.chunk_bytes), o.chunk_bytes / size_of(o.dtype), o.fifo_depth,
                     o.threads_per_block);
  if (o.pull != PullEdges::none)
    out += fmt::format("// pulled edges {} (receivers read these senders' send buffers directly)\n", to_string(o.pull));
  out += fmt::format("// rate         predicted algbw {:.2f} GB/s, bound {:.2f} GB/s\n", p.algbw_gbps, p.bound_algbw_gbps);
  out += fmt::format("// trees        {} (weights are parts of their group's total; see docs/codegen.md)\n", p.trees.size());
  for (std::size_t t = 0; t < p.trees.size(); ++t)
    out += fmt::format("//   tree {:<3} {:<3} weight {:<6} blocks {:<2} {}\n", t, to_string(p.trees[t].direction),
                       s.tree_weights[t], s.tree_blocks[t], tree_text(s, static_cast<int>(t)));
  return out;
}

std::string banner(const Schedule& s, const KernelSource& k) {
  const Plan& p = s.plan;
  const CodegenOptions& o = s.options;
  std::string out =
      fmt::format("// MACHINE GENERATED by canopy {} from templates/: do not edit; regenerate with `canopy gen`.\n",
                  CANOPY_VERSION);
  out += fmt::format("//\n// topology     {}\n", p.topology);
  std::vector<std::string> placed;
  for (int r = 0; r < s.ranks; ++r) placed.push_back(fmt::format("{}@dev{}", p.ranks[r], o.device_of_rank[r]));
  out += s.program ? program_banner(s, placed) : tree_banner(s, placed);
  if (!s.relays.empty()) {
    std::vector<std::string> relays;
    for (const RelayParticipant& relay : s.relays) relays.push_back(fmt::format("{}@dev{}", relay.name, relay.device));
    out += fmt::format("// relays       {} (other GPUs forwarding: FIFO to FIFO, no user buffer, no reduction)\n",
                       fmt::join(relays, " "));
  }
  out += fmt::format("// kernel       {}(args, device)\n", k.entry);
  for (const DeviceLaunch& l : k.launches) {
    std::vector<std::string> ranks;
    for (int r : l.ranks) ranks.push_back(s.name_of(r));
    out += fmt::format("//   device {:<3} {} blocks x {} threads: {}\n", l.device, l.blocks, l.threads,
                       fmt::join(ranks, " "));
  }
  out += fmt::format("// schedule key {}\n\n", k.schedule_key);
  return out;
}

std::string schedule_key(const Schedule& s) {
  Sha256 h;
  h.update(plan_to_json(s.plan)).update("\n" + to_string(s.options));
  if (s.program) h.update("\n" + s.program->text);
  return h.hex_digest();
}

std::string sanitize(const std::string& name) {
  std::string out;
  for (char ch : name)
    if (std::isalnum(static_cast<unsigned char>(ch))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out.empty() ? "topology" : out;
}

}  // namespace

std::string kernel_base_name(const Schedule& s) {
  if (s.program) {
    std::string name = fmt::format("canopy_algo_{}_r{}_c{}_{}", sanitize(s.program->name), s.ranks,
                                   chunk_tag(s.options.chunk_bytes), to_string(s.options.dtype));
    return s.program->reduces ? name + "_" + to_string(s.options.op) : name;
  }
  std::string name = fmt::format("canopy_{}_{}_t{}_c{}_{}", to_string(s.plan.collective), sanitize(s.plan.topology),
                                 s.plan.trees.size(), chunk_tag(s.options.chunk_bytes), to_string(s.options.dtype));
  if (reduces(s.plan.collective)) name += "_" + to_string(s.options.op);
  if (s.options.own_buffers_only) name += "_own";  // every edge through FIFOs (ranks in other processes)
  if (!s.relays.empty()) name += fmt::format("_relays{}", s.relays.size());  // other GPUs forward (Blink+)
  return name;
}

KernelSource emit_cuda(const Schedule& s) {
  const CodegenOptions& o = s.options;
  KernelSource k;
  k.name = kernel_base_name(s);
  k.ranks = s.participants();  // DeviceArgs' entries: the ranks, then any relay participants
  k.resources = s.resources;
  k.schedule_key = schedule_key(s);
  k.entry = k.name;
  std::vector<Tables> tables;
  std::set<std::pair<int, int>> shapes;
  int max_sources = 1, max_destinations = 1;
  for (const DeviceSchedule& d : s.devices) {
    k.launches.push_back({d.device, d.ranks, d.blocks, o.threads_per_block});
    tables.push_back(device_tables(s, d));
    shapes.insert(tables.back().shapes.begin(), tables.back().shapes.end());
    max_sources = std::max(max_sources, tables.back().max_sources);
    max_destinations = std::max(max_destinations, tables.back().max_destinations);
  }

  std::string out = banner(s, k);
  out += "#include \"canopy/canopy.cuh\"\n\n";
  out += "namespace {\n\n";
  out += "using namespace canopy;\n\n";
  out += "// What these kernels are specialised for (templates/schedule.cuh reads these).\n";
  out += "struct Config {\n";
  out += fmt::format("  typedef {} T;\n", cuda_type_name(o.dtype));
  out += fmt::format("  typedef {} Op;\n", cuda_op_name(o.op));
  out += fmt::format("  typedef DeviceArgs<{}> Args;\n", s.participants());
  out += fmt::format("  static constexpr unsigned long long kChunkBytes = {};  // {}\n", o.chunk_bytes,
                     format_byte_size(o.chunk_bytes));
  out += fmt::format("  static constexpr unsigned long long kChunk = {};  // elements per chunk\n",
                     o.chunk_bytes / size_of(o.dtype));
  out += fmt::format("  static constexpr int kDepth = {};  // FIFO slots per reduce edge and block\n", o.fifo_depth);
  out += fmt::format("  static constexpr unsigned long long kFifoBytes = {};  // one block's FIFO on one edge\n",
                     s.fifo_bytes());
  out += fmt::format("  static constexpr unsigned long long kAlign = {};  // elements per 16-byte vector\n",
                     16 / size_of(o.dtype));
  out += fmt::format("  static constexpr int kMaxSources = {};\n", max_sources);
  out += fmt::format("  static constexpr int kMaxDestinations = {};\n", max_destinations);
  int widest_copy = 0, widest_reduce = 0;  // destinations of copies, sources of reductions
  int fused_sources = 0, fused_destinations = 0;  // steps that reduce and copy to several buffers (programs)
  for (const auto& [src, dst] : shapes) {
    if (src > 1 && dst > 1) {
      fused_sources = std::max(fused_sources, src), fused_destinations = std::max(fused_destinations, dst);
      continue;
    }
    if (src == 1) widest_copy = std::max(widest_copy, dst);
    if (src > 1) widest_reduce = std::max(widest_reduce, src);
  }
  out +=
      fused_sources > 0
          ? "  // reduce_copy instances serve every step: the widest copy, the widest reduction and the widest step\n"
            "  // that does both (a fused receive-reduce-send).\n"
          : "  // Two reduce_copy instances serve every step: the widest copy and the widest reduction.\n";
  out += "  __device__ static void reduce_copy(int sources, int destinations, T* const* dst, const T* const* src,\n"
         "                                    unsigned long long n) {\n";
  if (fused_sources > 0)
    out += fmt::format(
        "    if (sources > 1 && destinations > 1)\n"
        "      return reduce_copy_n<Op, T, {}, {}>(dst, destinations, src, sources, n);\n",
        fused_sources, fused_destinations);
  if (widest_reduce == 0 && widest_copy == 0) {
    out += "    (void)sources, (void)destinations, (void)dst, (void)src, (void)n;\n";
  } else if (widest_reduce > 0 && widest_copy > 0) {
    out += fmt::format("    if (sources > 1) return reduce_copy_n<Op, T, {0}, 1>(dst, 1, src, sources, n);\n"
                       "    return reduce_copy_n<Op, T, 1, {1}>(dst, destinations, src, 1, n);\n",
                       widest_reduce, widest_copy);
  } else if (widest_reduce > 0) {
    out += fmt::format("    return reduce_copy_n<Op, T, {0}, 1>(dst, 1, src, sources, n);\n", widest_reduce);
  } else {
    out += fmt::format("    return reduce_copy_n<Op, T, 1, {0}>(dst, destinations, src, 1, n);\n", widest_copy);
  }
  out += "  }\n};\n\n";

  out += "}  // namespace\n\n";
  for (std::size_t e = 0; e < s.devices.size(); ++e) {
    const DeviceSchedule& d = s.devices[e];
    const Tables& t = tables[e];
    std::vector<std::string> ranks;
    for (int r : d.ranks) ranks.push_back(s.name_of(r));
    out += fmt::format("// Device {}: ranks {}.\n", d.device, fmt::join(ranks, " "));
    out += fmt::format("namespace dev{} {{\n\n", d.device);
    out += "using namespace canopy;\n\n";
    out += "// One row per tree this GPU's ranks take part in: {range {block_of, splits, lo, hi}, blocks,\n"
           "// first step, prologue steps, per-chunk steps, epilogue steps}.\n";
    out += "__device__ const LaneRec kLanes[] = {\n" + t.lanes + "};\n\n";
    out += "// {kind, until, sources, destinations, flags, first, epoch_only, {flag rank, flag index}, dependency}.\n";
    out += "__device__ const StepRec kSteps[] = {\n" + t.steps + "};\n\n";
    out += "// reduce_copy operands {kind, mode, rank, FIFO offset}, in step order.\n";
    out += "__device__ const BufferRec kBuffers[] = {\n" + t.buffers + "};\n\n";
    out += "// Counters signals raise {rank, index}, in step order.\n";
    out += "__device__ const FlagRec kFlags[] = {\n" + t.flags + "};\n\n";
    out += "// blockIdx.x -> {lane, block within the lane}.\n";
    out += "__device__ const BlockRec kBlocks[] = {" + t.blocks + "\n};\n\n";
    out += fmt::format("}}  // namespace dev{}\n\n", d.device);
  }
  out += "namespace {\n\n";
  out += "// Each device's schedule, by the `device` argument.\n";
  out += "__device__ const canopy::Program kPrograms[] = {";
  for (const DeviceSchedule& d : s.devices)
    out += fmt::format("\n    {{dev{0}::kLanes, dev{0}::kSteps, dev{0}::kBuffers, dev{0}::kFlags, dev{0}::kBlocks}},", d.device);
  out += "};\n\n}  // namespace\n\n";
  out += "// Launched on device d with the grid and block the banner lists for d.\n";
  const std::string bounds = o.min_blocks_per_sm > 0 ? fmt::format("{}, {}", o.threads_per_block, o.min_blocks_per_sm)
                                                     : fmt::format("{}", o.threads_per_block);
  out += fmt::format("extern \"C\" __global__ void __launch_bounds__({})\n{}(const Config::Args a, int device) {{\n",
                     bounds, k.entry);
  out += "  canopy::run_block<Config>(a, kPrograms[device], device);\n}\n";
  k.file = SourceFile{k.name + ".cu", out};
  return k;
}

}  // namespace canopy
