// Export of a program as MSCCL-IR XML (see msccl_xml.hpp): one thread block per (peer, direction, channel) and per
// channel for local steps, dependences between thread blocks as depid/deps (extra ones as nop steps), and every
// attribute MSCCL's executor requires, within its limits (microsoft/msccl src/graph/topo.cc at b23e9cd,
// mscclGetAlgoFromXMLAndSetAlgo: at most 216 thread blocks, 256 steps per block, cnt below 72, 32 channels).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "dsl/msccl_layout.hpp"
#include "dsl/msccl_xml.hpp"

namespace canopy::algo {
namespace {

// MSCCL's coll attribute: the collective's name (reduce_scatter with an underscore), alltoall, or custom.
std::string coll_name(const Program& p) {
  if (std::holds_alternative<CustomGoal>(p.spec())) return "custom";
  return p.collective() == Collective::reducescatter ? "reduce_scatter" : p.goal();
}


// MSCCL's executor refuses a program past its limits or whose i_chunks/o_chunks disagree with nchunksperloop: say
// so here rather than have the runtime ignore the file.
void check_executor_limits(const Program& p, int channels, int nchunksperloop) {
  constexpr int kMaxChannels = 32, kMaxCount = 72;
  if (channels > kMaxChannels)
    throw Error(fmt::format("MSCCL-IR export of '{}': {} channels, MSCCL's executor takes at most {}: use fewer "
                            "channels in the program's hints",
                            p.name(), channels, kMaxChannels));
  for (const Op& op : p.ops())
    if (op.src.count >= kMaxCount)
      throw Error(fmt::format("MSCCL-IR export of '{}': a statement (line {}) moves {} chunks, MSCCL's executor takes "
                              "fewer than {} per step: split it",
                              p.name(), op.line, op.src.count, kMaxCount));
  if (std::holds_alternative<CustomGoal>(p.spec()))
    for (Buffer b : {Buffer::input, Buffer::output})
      if (p.buffer_chunks(b) != nchunksperloop)
        throw Error(fmt::format("MSCCL-IR export of '{}': MSCCL's executor needs a custom collective's input and "
                                "output to hold nchunksperloop chunks each; they hold {} and {}",
                                p.name(), p.buffer_chunks(Buffer::input), p.buffer_chunks(Buffer::output)));
}

void check_block_limits(const Program& p, int gpu, int blocks, int most_steps) {
  constexpr int kMaxBlocks = 216, kMaxSteps = 256;
  if (blocks > kMaxBlocks || most_steps > kMaxSteps)
    throw Error(fmt::format("MSCCL-IR export of '{}': gpu {} needs {} thread blocks with up to {} steps; MSCCL's "
                            "executor takes at most {} blocks of {} steps: use fewer channels or peers per rank",
                            p.name(), gpu, blocks, most_steps, kMaxBlocks, kMaxSteps));
}

}  // namespace

std::string to_msccl_xml(const Program& p) {
  struct Step {
    std::string type;
    ChunkRef src, dst;
    std::vector<std::pair<int, int>> deps;  // (tb, step) on this GPU
  };
  struct Block {
    int send = -1, recv = -1, chan = 0;
    std::vector<Step> steps;
  };
  const int n = p.ranks();
  std::vector<std::vector<Block>> blocks(n);
  std::vector<std::map<std::tuple<int, int, int>, int>> block_of(n);  // (send, recv, chan) -> tb id
  auto tb = [&](int gpu, int send, int recv, int chan) {
    auto [it, fresh] = block_of[gpu].emplace(std::tuple{send, recv, chan}, static_cast<int>(blocks[gpu].size()));
    if (fresh) blocks[gpu].push_back(Block{send, recv, chan, {}});
    return it->second;
  };
  // Per GPU: the last step writing each slot, and the last step on each channel (to keep channel order across thread
  // blocks).
  std::vector<std::map<std::pair<Buffer, int>, std::pair<int, int>>> writer(n);
  std::vector<std::map<int, std::pair<int, int>>> channel_last(n);
  auto place = [&](int gpu, int block, Step step, const std::vector<std::pair<Buffer, int>>& reads,
                   const std::vector<std::pair<Buffer, int>>& writes, int chan) {
    std::set<std::pair<int, int>> deps;
    for (const auto& slot : reads)
      if (auto w = writer[gpu].find(slot); w != writer[gpu].end() && w->second.first != block) deps.insert(w->second);
    if (auto c = channel_last[gpu].find(chan); c != channel_last[gpu].end() && c->second.first != block)
      deps.insert(c->second);
    step.deps.assign(deps.begin(), deps.end());
    auto& steps = blocks[gpu][block].steps;
    steps.push_back(step);
    const std::pair<int, int> at{block, static_cast<int>(steps.size()) - 1};
    for (const auto& slot : writes) writer[gpu][slot] = at;
    channel_last[gpu][chan] = at;
  };
  auto slots = [](const ChunkRef& c) {
    std::vector<std::pair<Buffer, int>> out;
    for (int j = 0; j < c.count; ++j) out.push_back({c.buffer, c.index + j});
    return out;
  };
  for (const Op& op : p.ops()) {
    const int a = op.src.rank, b = op.dst.rank, chan = op.hints.channel;
    const bool reduce = op.kind == OpKind::reduce;
    if (a == b) {
      std::vector<std::pair<Buffer, int>> reads = slots(op.src);
      if (reduce)
        for (const auto& s : slots(op.dst)) reads.push_back(s);
      place(a, tb(a, -1, -1, chan), Step{reduce ? "re" : "cpy", op.src, op.dst, {}}, reads, slots(op.dst), chan);
      continue;
    }
    place(a, tb(a, b, -1, chan), Step{"s", op.src, op.dst, {}}, slots(op.src), {}, chan);
    place(b, tb(b, -1, a, chan), Step{reduce ? "rrc" : "r", reduce ? op.dst : op.src, op.dst, {}},
          reduce ? slots(op.dst) : std::vector<std::pair<Buffer, int>>{}, slots(op.dst), chan);
  }
  // A step may name one dependence: the others become nop steps before it.
  int channels = 1;
  for (const Op& op : p.ops()) channels = std::max(channels, op.hints.channel + 1);
  const int total = std::max(p.buffer_chunks(Buffer::input), p.buffer_chunks(Buffer::output));
  check_executor_limits(p, channels, total);
  std::string out = fmt::format(
      "<algo name=\"{}\" proto=\"Simple\" nchannels=\"{}\" nchunksperloop=\"{}\" ngpus=\"{}\" coll=\"{}\" "
      "inplace=\"0\"{}>\n",
      p.name(), channels, total, n, coll_name(p),
      p.collective() && has_root(*p.collective()) ? fmt::format(" root=\"{}\"", p.root()) : "");
  for (int g = 0; g < n; ++g) {
    // Final step indices once nops are inserted, and which steps others depend on.
    std::vector<std::vector<int>> index(blocks[g].size());
    for (std::size_t t = 0; t < blocks[g].size(); ++t) {
      int s = 0;
      for (const Step& step : blocks[g][t].steps) {
        s += step.deps.size() > 1 ? static_cast<int>(step.deps.size()) - 1 : 0;
        index[t].push_back(s++);
      }
    }
    int most_steps = 0;
    for (const auto& steps : index) most_steps = std::max(most_steps, steps.empty() ? 0 : steps.back() + 1);
    check_block_limits(p, g, static_cast<int>(blocks[g].size()), most_steps);
    std::set<std::pair<int, int>> depended;
    for (const Block& b : blocks[g])
      for (const Step& step : b.steps)
        for (const auto& [t, s] : step.deps) depended.insert({t, index[t][s]});
    out +=
        fmt::format("  <gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"{}\" s_chunks=\"{}\">\n", g,
                    p.buffer_chunks(Buffer::input), p.buffer_chunks(Buffer::output), p.buffer_chunks(Buffer::scratch));
    for (std::size_t t = 0; t < blocks[g].size(); ++t) {
      const Block& b = blocks[g][t];
      out += fmt::format("    <tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"{}\">\n", t, b.send, b.recv, b.chan);
      int s = 0;
      for (const Step& step : b.steps) {
        for (std::size_t d = 0; d + 1 < step.deps.size(); ++d, ++s)
          out += fmt::format(
              "      <step s=\"{}\" type=\"nop\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"-1\" cnt=\"0\" "
              "depid=\"{}\" deps=\"{}\" hasdep=\"{}\"/>\n",
              s, step.deps[d].first, index[step.deps[d].first][step.deps[d].second],
              depended.count({static_cast<int>(t), s}) ? 1 : 0);
        const auto dep = step.deps.empty() ? std::pair{-1, -1}
                                           : std::pair{step.deps.back().first,
                                                       index[step.deps.back().first][step.deps.back().second]};
        out += fmt::format(
            "      <step s=\"{}\" type=\"{}\" srcbuf=\"{}\" srcoff=\"{}\" dstbuf=\"{}\" dstoff=\"{}\" cnt=\"{}\" "
            "depid=\"{}\" deps=\"{}\" hasdep=\"{}\"/>\n",
            s, step.type, msccl_buffer_letter(step.src.buffer), step.src.index, msccl_buffer_letter(step.dst.buffer),
            step.dst.index, step.src.count, dep.first, dep.second, depended.count({static_cast<int>(t), s}) ? 1 : 0);
        ++s;
      }
      out += "    </tb>\n";
    }
    out += "  </gpu>\n";
  }
  out += "</algo>\n";
  return out;
}

}  // namespace canopy::algo
