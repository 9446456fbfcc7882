// Reading and writing MSCCL-IR XML (see msccl_xml.hpp): a small reader for its element-and-attribute XML, the export
// of a program's statements as thread blocks and steps, and the import back to statements.
#include "dsl/msccl_xml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <queue>
#include <set>

#include "core/error.hpp"

namespace canopy::algo {
namespace {

// ---- a reader for XML elements with attributes (no text content, as MSCCL-IR) ----

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<Element> children;
  int line = 1;
};

class XmlReader {
 public:
  XmlReader(std::string_view text, std::string_view origin) : text_(text), origin_(origin) {}

  Element document() {
    skip_misc();
    if (at_end()) fail("empty document: expected an <algo> element");
    Element root = element(0);
    skip_misc();
    if (!at_end()) fail("text after the root element");
    return root;
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw Error(fmt::format("{}:{}: error: {}", origin_, line_, message));
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  void advance(std::size_t n = 1) {
    for (std::size_t i = 0; i < n && pos_ < text_.size(); ++i, ++pos_)
      if (text_[pos_] == '\n') ++line_;
  }
  bool starts(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }
  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(peek()))) advance();
  }
  void skip_until(std::string_view end, const char* what) {
    while (!at_end() && !starts(end)) advance();
    if (at_end()) fail(fmt::format("unterminated {}", what));
    advance(end.size());
  }
  // Whitespace, comments, the <?xml ?> declaration.
  void skip_misc() {
    for (;;) {
      skip_space();
      if (starts("<!--"))
        skip_until("-->", "comment");
      else if (starts("<?"))
        skip_until("?>", "declaration");
      else
        return;
    }
  }
  std::string name() {
    const std::size_t start = pos_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '-' ||
                         peek() == ':' || peek() == '.'))
      advance();
    if (pos_ == start)
      fail(fmt::format("expected a name, found '{}'", at_end() ? std::string("end of file") : std::string(1, peek())));
    return std::string(text_.substr(start, pos_ - start));
  }
  std::string value() {
    const char quote = peek();
    if (quote != '"' && quote != '\'') fail("attribute values are quoted: name=\"value\"");
    advance();
    std::string out;
    while (!at_end() && peek() != quote) {
      if (peek() == '<') fail("'<' inside an attribute value");
      if (peek() == '&') {
        static const std::pair<std::string_view, char> kEntities[] = {
            {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
        bool known = false;
        for (const auto& [entity, c] : kEntities)
          if (starts(entity)) out += c, advance(entity.size()), known = true;
        if (!known) fail("unknown entity: use &lt; &gt; &amp; &quot; or &apos;");
        continue;
      }
      out += peek();
      advance();
    }
    if (at_end()) fail("unterminated attribute value");
    advance();
    return out;
  }
  Element element(int depth) {
    if (depth > 8) fail("elements nested too deeply for MSCCL-IR (algo > gpu > tb > step)");
    Element e;
    e.line = line_;
    if (peek() != '<') fail("expected '<'");
    advance();
    e.name = name();
    for (;;) {
      skip_space();
      if (starts("/>")) {
        advance(2);
        return e;
      }
      if (peek() == '>') {
        advance();
        break;
      }
      const int line = line_;
      const std::string key = name();
      skip_space();
      if (peek() != '=') fail(fmt::format("attribute '{}' needs a value: {}=\"...\"", key, key));
      advance();
      skip_space();
      if (!e.attrs.emplace(key, value()).second) {
        line_ = line;
        fail(fmt::format("attribute '{}' given twice on <{}>", key, e.name));
      }
    }
    for (;;) {
      skip_misc();
      if (at_end()) fail(fmt::format("<{}> (line {}) is never closed", e.name, e.line));
      if (starts("</")) {
        advance(2);
        const std::string closing = name();
        if (closing != e.name) fail(fmt::format("</{}> closes <{}> (line {})", closing, e.name, e.line));
        skip_space();
        if (peek() != '>') fail("expected '>'");
        advance();
        return e;
      }
      if (peek() != '<') fail(fmt::format("text inside <{}>: MSCCL-IR holds elements and attributes only", e.name));
      e.children.push_back(element(depth + 1));
    }
  }

  std::string_view text_;
  std::string_view origin_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

[[noreturn]] void fail_at(std::string_view origin, int line, const std::string& message) {
  throw Error(fmt::format("{}:{}: error: {}", origin, line, message));
}

int int_attr(std::string_view origin, const Element& e, const std::string& key, std::optional<int> fallback = {}) {
  const auto it = e.attrs.find(key);
  if (it == e.attrs.end()) {
    if (fallback) return *fallback;
    fail_at(origin, e.line, fmt::format("<{}> lacks attribute {}", e.name, key));
  }
  int v = 0;
  const std::string& s = it->second;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    fail_at(origin, e.line, fmt::format("<{}> {}=\"{}\": expected an integer", e.name, key, s));
  return v;
}

std::string str_attr(std::string_view origin, const Element& e, const std::string& key,
                     const char* fallback = nullptr) {
  const auto it = e.attrs.find(key);
  if (it != e.attrs.end()) return it->second;
  if (fallback) return fallback;
  fail_at(origin, e.line, fmt::format("<{}> lacks attribute {}", e.name, key));
}

// MSCCL's coll attribute: the collective's name (reduce_scatter with an underscore), alltoall, or custom.
std::string coll_name(const Program& p) {
  if (std::holds_alternative<CustomGoal>(p.spec())) return "custom";
  return p.collective() == Collective::reducescatter ? "reduce_scatter" : p.goal();
}

// Whether any step combines (re, rrc, rrcs): an imported custom goal reduces then.
bool has_reduce_steps(const std::vector<const Element*>& gpus) {
  for (const Element* g : gpus)
    for (const Element& t : g->children)
      for (const Element& s : t.children)
        if (const auto it = s.attrs.find("type");
            it != s.attrs.end() && (it->second == "re" || it->second.starts_with("rrc")))
          return true;
  return false;
}

char buffer_letter(Buffer b) { return b == Buffer::input ? 'i' : b == Buffer::output ? 'o' : 's'; }

}  // namespace

// ---- export ----

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
            s, step.type, buffer_letter(step.src.buffer), step.src.index, buffer_letter(step.dst.buffer),
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

// ---- import ----

Program from_msccl_xml(std::string_view text, std::string_view origin) {
  const Element algo = XmlReader(text, origin).document();
  if (algo.name != "algo")
    fail_at(origin, algo.line, fmt::format("the root element is <{}>, expected <algo>", algo.name));
  std::vector<const Element*> gpus;
  for (const Element& e : algo.children) {
    if (e.name != "gpu") fail_at(origin, e.line, fmt::format("<{}> inside <algo>: expected <gpu>", e.name));
    gpus.push_back(&e);
  }
  const int n = int_attr(origin, algo, "ngpus", static_cast<int>(gpus.size()));
  if (n < 1 || n > 4096 || static_cast<int>(gpus.size()) != n)
    fail_at(origin, algo.line, fmt::format("ngpus=\"{}\" but the file has {} <gpu> elements", n, gpus.size()));
  const std::string coll = str_attr(origin, algo, "coll");
  const std::optional<Collective> collective = parse_collective(coll == "reduce_scatter" ? "reducescatter" : coll);
  if (!collective && coll != "alltoall" && coll != "custom")
    fail_at(origin, algo.line,
            fmt::format("coll=\"{}\": expected allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall or "
                        "custom",
                        coll));
  const bool inplace = int_attr(origin, algo, "inplace", 0) != 0;
  if (inplace && collective != Collective::allreduce)
    fail_at(origin, algo.line, "in-place programs are read for allreduce only");
  std::vector<const Element*> by_id(n, nullptr);
  for (const Element* g : gpus) {
    const int id = int_attr(origin, *g, "id");
    if (id < 0 || id >= n || by_id[id])
      fail_at(origin, g->line, fmt::format("gpu id {} is out of 0..{} or repeated", id, n - 1));
    by_id[id] = g;
  }
  const int i_chunks = int_attr(origin, *by_id[0], "i_chunks"), o_chunks = int_attr(origin, *by_id[0], "o_chunks");
  Program p = [&] {
    const std::string name = str_attr(origin, algo, "name", "imported");
    if (coll == "alltoall") {
      if (i_chunks < n || i_chunks % n != 0)
        fail_at(
            origin, by_id[0]->line,
            fmt::format("an alltoall over {} ranks has i_chunks that are a multiple of {}, not {}", n, n, i_chunks));
      return Program(name, AllToAll{}, n, i_chunks / n);
    }
    if (coll == "custom") {  // MSCCL-IR has no post-condition: every output is free; the steps are still checked
      if (i_chunks < 1 || o_chunks < 1) fail_at(origin, by_id[0]->line, "i_chunks and o_chunks must be >= 1");
      return Program(name,
                     CustomGoal{.name = "custom",
                                .output = [](int, int) { return std::optional<Contents>(); },
                                .reduces = has_reduce_steps(gpus),
                                .input_chunks = i_chunks,
                                .output_chunks = o_chunks},
                     n, 1);
    }
    const int chunks = *collective == Collective::reducescatter ? o_chunks : i_chunks;
    return Program(name, *collective, n, std::max(1, chunks), int_attr(origin, algo, "root", 0));
  }();
  for (const Element* g : by_id)
    if (int_attr(origin, *g, "i_chunks") != p.buffer_chunks(Buffer::input) ||
        int_attr(origin, *g, "o_chunks") != p.buffer_chunks(Buffer::output))
      fail_at(origin, g->line,
              fmt::format("a {} over {} ranks of {} chunks has inputs of {} and outputs of {} chunks", coll, n,
                          p.chunks(), p.buffer_chunks(Buffer::input), p.buffer_chunks(Buffer::output)));

  struct Step {
    int gpu, tb, chan, send, recv, line;
    std::string type;
    Buffer srcbuf, dstbuf;
    int srcoff, dstoff, cnt, depid, deps;
  };
  std::vector<Step> steps;
  std::map<std::pair<int, int>, std::vector<int>> tb_steps;            // (gpu, tb) -> step ids in order
  std::map<std::tuple<int, int, int>, std::vector<int>> sends, recvs;  // (from, to, chan) -> step ids
  std::map<std::tuple<int, int, int>, int> send_block, recv_block;
  auto buffer = [&](const Element& e, const char* key) {
    const std::string b = str_attr(origin, e, key);
    if (b == "i") return inplace ? Buffer::output : Buffer::input;
    if (b == "o") return Buffer::output;
    if (b == "s") return Buffer::scratch;
    fail_at(origin, e.line, fmt::format("{}=\"{}\": expected i, o or s", key, b));
  };
  for (int g = 0; g < n; ++g)
    for (const Element& t : by_id[g]->children) {
      if (t.name != "tb") fail_at(origin, t.line, fmt::format("<{}> inside <gpu>: expected <tb>", t.name));
      const int id = int_attr(origin, t, "id"), send = int_attr(origin, t, "send"), recv = int_attr(origin, t, "recv");
      const int chan = int_attr(origin, t, "chan", 0);
      if (send < -1 || send >= n || recv < -1 || recv >= n || chan < 0 || chan > 1024)
        fail_at(origin, t.line, fmt::format("tb {}: send {} / recv {} / chan {} out of range", id, send, recv, chan));
      if (tb_steps.count({g, id}))
        fail_at(origin, t.line, fmt::format("gpu {} has two thread blocks with id {}", g, id));
      auto& list = tb_steps[{g, id}];
      for (const Element& s : t.children) {
        if (s.name != "step") fail_at(origin, s.line, fmt::format("<{}> inside <tb>: expected <step>", s.name));
        Step x{g, id, chan, send, recv, s.line, str_attr(origin, s, "type"), Buffer::input, Buffer::input,
               0, 0,  0,    -1,   -1};
        if (int_attr(origin, s, "s") != static_cast<int>(list.size()))
          fail_at(origin, s.line,
                  fmt::format("step s=\"{}\": steps of a thread block are numbered 0, 1, ... in order",
                              int_attr(origin, s, "s")));
        x.depid = int_attr(origin, s, "depid", -1);
        x.deps = int_attr(origin, s, "deps", -1);
        const bool is_send = x.type == "s" || x.type == "rcs" || x.type == "rrcs";
        const bool is_recv = x.type == "r" || x.type == "rcs" || x.type == "rrc" || x.type == "rrcs";
        if (x.type == "nop") {
          list.push_back(static_cast<int>(steps.size()));
          steps.push_back(x);
          continue;
        }
        if (!is_send && !is_recv && x.type != "cpy" && x.type != "re")
          fail_at(origin, s.line,
                  fmt::format("step type '{}' is not read (s, r, rrc, rcs, rrcs, cpy, re and nop are)", x.type));
        x.srcbuf = buffer(s, "srcbuf");
        x.dstbuf = buffer(s, "dstbuf");
        x.srcoff = int_attr(origin, s, "srcoff");
        x.dstoff = int_attr(origin, s, "dstoff");
        x.cnt = int_attr(origin, s, "cnt");
        if (x.cnt < 1 || x.srcoff < 0 || x.dstoff < 0) fail_at(origin, s.line, "cnt must be >= 1 and offsets >= 0");
        const int sid = static_cast<int>(steps.size());
        // One thread block per connection and channel carries its steps, in order.
        auto connect = [&](bool sending, int peer, auto& blocks, auto& list) {
          if (peer < 0)
            fail_at(origin, s.line,
                    fmt::format("a '{}' step in a thread block without a {} peer", x.type, sending ? "send" : "recv"));
          const auto key = sending ? std::tuple{g, peer, chan} : std::tuple{peer, g, chan};
          if (auto [it, fresh] = blocks.emplace(key, id); !fresh && it->second != id)
            fail_at(origin, t.line,
                    fmt::format("gpu {}: thread blocks {} and {} both {} gpu {} on channel {}", g, it->second, id,
                                sending ? "send to" : "receive from", peer, chan));
          list[key].push_back(sid);
        };
        if (is_send) connect(true, send, send_block, sends);
        if (is_recv) connect(false, recv, recv_block, recvs);
        list.push_back(sid);
        steps.push_back(x);
      }
    }
  // Order: thread-block order, named dependences, each receive after its matching send.
  const int total = static_cast<int>(steps.size());
  std::vector<std::vector<int>> next(total);
  std::vector<int> matched_send(total, -1);
  for (const auto& [key, list] : tb_steps)
    for (std::size_t i = 0; i + 1 < list.size(); ++i) next[list[i]].push_back(list[i + 1]);
  for (int s = 0; s < total; ++s) {
    if (steps[s].depid < 0) continue;
    const auto it = tb_steps.find({steps[s].gpu, steps[s].depid});
    if (it == tb_steps.end() || steps[s].deps < 0 || steps[s].deps >= static_cast<int>(it->second.size()))
      fail_at(
          origin, steps[s].line,
          fmt::format("depid=\"{}\" deps=\"{}\" names no step of gpu {}", steps[s].depid, steps[s].deps, steps[s].gpu));
    next[it->second[steps[s].deps]].push_back(s);
  }
  for (const auto& [key, list] : sends) {
    const auto r = recvs.find(key);
    const std::size_t got = r == recvs.end() ? 0 : r->second.size();
    if (got != list.size())
      fail_at(origin, steps[list.front()].line,
              fmt::format("gpu {} sends {} times to gpu {} on channel {} but gpu {} receives {} times",
                          std::get<0>(key), list.size(), std::get<1>(key), std::get<2>(key), std::get<1>(key), got));
    for (std::size_t k = 0; k < list.size(); ++k) {
      const int s = list[k], q = r->second[k];
      if (steps[s].cnt != steps[q].cnt)
        fail_at(origin, steps[q].line,
                fmt::format("receives {} chunks where the matching send (line {}) sends {}", steps[q].cnt,
                            steps[s].line, steps[s].cnt));
      matched_send[q] = s;
      next[s].push_back(q);
    }
  }
  for (const auto& [key, list] : recvs)
    if (!sends.count(key))
      fail_at(origin, steps[list.front()].line,
              fmt::format("gpu {} receives from gpu {} on channel {}, which never sends there", std::get<1>(key),
                          std::get<0>(key), std::get<2>(key)));
  std::vector<int> indegree(total, 0);
  for (int s = 0; s < total; ++s)
    for (int w : next[s]) ++indegree[w];
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int s = 0; s < total; ++s)
    if (indegree[s] == 0) ready.push(s);
  std::vector<int> order;
  while (!ready.empty()) {
    const int s = ready.top();
    ready.pop();
    order.push_back(s);
    for (int w : next[s])
      if (--indegree[w] == 0) ready.push(w);
  }
  if (static_cast<int>(order.size()) < total) {
    for (int s = 0; s < total; ++s)
      if (indegree[s] > 0)
        fail_at(origin, steps[s].line,
                fmt::format("deadlock: gpu {} thread block {} step waits in a cycle of thread-block order, "
                            "dependences and send/receive matches",
                            steps[s].gpu, steps[s].tb));
  }
  // Statements in that order.
  if (inplace)
    for (int r = 0; r < n; ++r)  // in place: the output starts as the input
      p.add(OpKind::copy, ChunkRef{r, Buffer::input, 0, p.chunks()}, ChunkRef{r, Buffer::output, 0, p.chunks()},
            Hints{}, algo.line);
  auto add = [&](OpKind kind, ChunkRef src, ChunkRef dst, const Step& at) {
    if (inplace && src.buffer == Buffer::input) src.buffer = Buffer::output;
    try {
      p.add(kind, src, dst, Hints{at.chan, {}}, at.line);
    } catch (const Error& e) {
      fail_at(origin, at.line, e.what());
    }
  };
  for (int s : order) {
    const Step& x = steps[s];
    const ChunkRef src{x.gpu, x.srcbuf, x.srcoff, x.cnt}, dst{x.gpu, x.dstbuf, x.dstoff, x.cnt};
    if (x.type == "cpy") add(OpKind::copy, src, dst, x);
    if (x.type == "re") add(OpKind::reduce, src, dst, x);
    if (matched_send[s] < 0) continue;
    const Step& from = steps[matched_send[s]];
    const bool fused = from.type != "s";  // rcs / rrcs forward what they stored
    const ChunkRef remote{from.gpu, fused ? from.dstbuf : from.srcbuf, fused ? from.dstoff : from.srcoff, from.cnt};
    if (x.type == "r" || x.type == "rcs") {
      add(OpKind::copy, remote, dst, x);
    } else {  // rrc, rrcs: dst = local src (op) received
      if (!(src == dst)) add(OpKind::copy, src, dst, x);
      add(OpKind::reduce, remote, dst, x);
    }
  }
  return p;
}

}  // namespace canopy::algo
