// Import of MSCCL-IR XML as msccl-tools writes it and MSCCL's executor reads it (see msccl_xml.hpp): the header and the
// program's size, every step type (s, r, rcs, rrs, rrc, rrcs, cpy, re, nop) checked against its GPU's declared
// buffers, sends matched with receives, the steps ordered by thread-block order, depid/deps and matches, and turned
// into copy and reduce statements through the in-place layout (msccl_layout.hpp). Every error names the file, the
// line, the <gpu>/<tb>/<step> element, what was expected and the fix.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <queue>
#include <tuple>

#include "core/error.hpp"
#include "dsl/msccl_layout.hpp"
#include "dsl/msccl_xml.hpp"
#include "core/xml_reader.hpp"

namespace canopy::algo {
namespace {

struct Step {
  int gpu = 0, tb = 0, s = 0, chan = 0, line = 0;
  std::string type;
  Buffer srcbuf = Buffer::input, dstbuf = Buffer::input;
  int srcoff = -1, dstoff = -1, cnt = 0, depid = -1, deps = -1;
  std::optional<int> hasdep;
  bool sends() const { return type == "s" || type == "rcs" || type == "rrs" || type == "rrcs"; }
  bool receives() const { return type == "r" || type == "rcs" || type == "rrs" || type == "rrc" || type == "rrcs"; }
  // Which operands live on this GPU (the executor checks those against i_chunks/o_chunks/s_chunks).
  bool local_src() const { return type == "s" || type == "rrs" || type == "rrc" || type == "rrcs" || local(); }
  bool local_dst() const { return type == "r" || type == "rcs" || type == "rrc" || type == "rrcs" || local(); }
  bool local() const { return type == "cpy" || type == "re"; }
};

std::string element(const Step& x) {
  return fmt::format("<gpu id=\"{}\"> <tb id=\"{}\"> <step s=\"{}\">", x.gpu, x.tb, x.s);
}

// The MSCCL buffers a GPU declares; nullopt: not declared (hand-written files without s_chunks), not checked.
struct Declared {
  int line = 0;
  std::optional<int> chunks[3];
};

const char* buffer_attr(Buffer b) { return b == Buffer::input ? "i_chunks" : b == Buffer::output ? "o_chunks" : "s_chunks"; }

struct Header {
  std::string name, coll_text;
  MscclColl coll = MscclColl::custom;
  bool inplace = false;
  int ranks = 0, root = 0;
  std::optional<int> nchunksperloop;
};

Header read_header(std::string_view origin, const XmlElement& algo, int gpu_elements) {
  Header h;
  h.name = str_attr(origin, algo, "name", "imported");
  h.ranks = int_attr(origin, algo, "ngpus", gpu_elements);
  if (h.ranks < 1 || h.ranks > 4096 || gpu_elements != h.ranks)
    fail_at(origin, algo.line, fmt::format("ngpus=\"{}\" but the file has {} <gpu> elements", h.ranks, gpu_elements));
  h.coll_text = str_attr(origin, algo, "coll");
  const std::optional<MscclColl> coll = parse_msccl_coll(h.coll_text);
  if (!coll)
    fail_at(origin, algo.line,
            fmt::format("coll=\"{}\": expected allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall or "
                        "custom",
                        h.coll_text));
  h.coll = *coll;
  const int inplace = int_attr(origin, algo, "inplace", 0);
  if (inplace != 0 && inplace != 1)
    fail_at(origin, algo.line, fmt::format("<algo> inplace=\"{}\": expected 0 (out of place) or 1 (in place)", inplace));
  h.inplace = inplace == 1;
  if (const std::string proto = str_attr(origin, algo, "proto", "Simple");
      proto != "Simple" && proto != "LL" && proto != "LL128")
    fail_at(origin, algo.line, fmt::format("<algo> proto=\"{}\": expected Simple, LL or LL128", proto));
  h.root = int_attr(origin, algo, "root", 0);
  if (algo.attrs.count("nchunksperloop")) h.nchunksperloop = int_attr(origin, algo, "nchunksperloop");
  return h;
}

// nchunksperloop, or for files without it what gpu 0's i_chunks/o_chunks imply.
int chunks_per_loop(std::string_view origin, const Header& h, const XmlElement& gpu0) {
  if (h.nchunksperloop) return *h.nchunksperloop;
  const int in = int_attr(origin, gpu0, "i_chunks"), out = int_attr(origin, gpu0, "o_chunks");
  if (h.coll == MscclColl::alltoall && (in < h.ranks || in % h.ranks != 0))
    fail_at(origin, gpu0.line,
            fmt::format("an alltoall over {} ranks has i_chunks that are a multiple of {}, not {}", h.ranks, h.ranks,
                        in));
  return std::max(in * msccl_chunks_multiplier(h.coll, Buffer::input, h.ranks),
                  out * msccl_chunks_multiplier(h.coll, Buffer::output, h.ranks));
}

// Whether any step combines (re, rrc, rrs, rrcs): an imported custom goal reduces then.
bool has_reduce_steps(const std::vector<const XmlElement*>& gpus) {
  for (const XmlElement* g : gpus)
    for (const XmlElement& t : g->children)
      for (const XmlElement& s : t.children)
        if (const auto it = s.attrs.find("type");
            it != s.attrs.end() && (it->second == "re" || it->second.starts_with("rr")))
          return true;
  return false;
}

// The Canopy program for the header: its goal and size; each GPU's i_chunks/o_chunks checked as MSCCL's executor does.
Program make_program(std::string_view origin, const Header& h, const std::vector<const XmlElement*>& by_id,
                     const XmlElement& algo, MscclLayout& layout) {
  const int n = h.ranks, loop = chunks_per_loop(origin, h, *by_id[0]);
  layout.coll = h.coll;
  layout.inplace = h.inplace;
  layout.ranks = n;
  if (h.coll == MscclColl::custom) {  // MSCCL-IR has no post-condition: every output is free; the steps are checked
    int in = 0, out = 0;
    for (const XmlElement* g : by_id) {
      in = std::max(in, int_attr(origin, *g, "i_chunks"));
      out = std::max(out, int_attr(origin, *g, "o_chunks"));
    }
    layout.chunks = std::max(1, loop);
    return Program(h.name,
                   CustomGoal{.name = "custom",
                              .output = [](int, int) { return std::optional<Contents>(); },
                              .reduces = has_reduce_steps(by_id),
                              .input_chunks = in,
                              .output_chunks = out},
                   n, layout.chunks);
  }
  const bool sliced = h.coll == MscclColl::allgather || h.coll == MscclColl::reduce_scatter ||
                      h.coll == MscclColl::alltoall;
  if (loop < 1 || (sliced && loop % n != 0))
    fail_at(origin, algo.line,
            fmt::format("nchunksperloop=\"{}\": a {} over {} ranks needs {}: fix nchunksperloop", loop, h.coll_text, n,
                        sliced ? fmt::format("a positive multiple of ngpus ({})", n) : std::string("at least 1")));
  layout.chunks = sliced ? loop / n : loop;
  for (const XmlElement* g : by_id)
    for (Buffer b : {Buffer::input, Buffer::output}) {
      const int declared = int_attr(origin, *g, buffer_attr(b)), times = msccl_chunks_multiplier(h.coll, b, n);
      if (declared != 0 && declared * times != loop)
        fail_at(origin, g->line,
                fmt::format("<gpu id=\"{}\"> {}=\"{}\": MSCCL's executor requires {}{} = nchunksperloop ({}) for {}, "
                            "or 0 when that buffer is unused: fix {} or nchunksperloop",
                            int_attr(origin, *g, "id"), buffer_attr(b), declared, buffer_attr(b),
                            times > 1 ? fmt::format(" x ngpus ({})", times) : "", loop, h.coll_text, buffer_attr(b)));
    }
  if (h.coll == MscclColl::alltoall) return Program(h.name, AllToAll{}, n, layout.chunks);
  static const std::map<MscclColl, Collective> kCollective = {
      {MscclColl::allreduce, Collective::allreduce},         {MscclColl::allgather, Collective::allgather},
      {MscclColl::reduce_scatter, Collective::reducescatter}, {MscclColl::broadcast, Collective::broadcast},
      {MscclColl::reduce, Collective::reduce}};
  try {
    return Program(h.name, kCollective.at(h.coll), n, layout.chunks, h.root);
  } catch (const Error& e) {
    fail_at(origin, algo.line, e.what());
  }
}

class StepReader {
 public:
  StepReader(std::string_view origin, int ranks) : origin_(origin), ranks_(ranks) {}

  void read_gpu(int g, const XmlElement& gpu) {
    Declared declared{gpu.line, {}};
    for (Buffer b : {Buffer::input, Buffer::output, Buffer::scratch})
      if (gpu.attrs.count(buffer_attr(b))) {
        const int v = int_attr(origin_, gpu, buffer_attr(b));
        if (v < 0)
          fail_at(origin_, gpu.line, fmt::format("<gpu id=\"{}\"> {}=\"{}\": expected 0 or more chunks", g,
                                                 buffer_attr(b), v));
        declared.chunks[static_cast<int>(b)] = v;
      }
    for (const XmlElement& t : gpu.children) read_tb(g, t, declared);
  }

  std::vector<Step> steps;
  std::map<std::pair<int, int>, std::vector<int>> tb_steps;            // (gpu, tb) -> step ids in order
  std::map<std::tuple<int, int, int>, std::vector<int>> sends, recvs;  // (from, to, chan) -> step ids

 private:
  void read_tb(int g, const XmlElement& t, const Declared& declared) {
    if (t.name != "tb") fail_at(origin_, t.line, fmt::format("<{}> inside <gpu id=\"{}\">: expected <tb>", t.name, g));
    const int id = int_attr(origin_, t, "id"), send = int_attr(origin_, t, "send"), recv = int_attr(origin_, t, "recv");
    const int chan = int_attr(origin_, t, "chan", 0);
    if (id < 0 || send < -1 || send >= ranks_ || recv < -1 || recv >= ranks_ || send == g || recv == g || chan < 0 ||
        chan > 1024)
      fail_at(origin_, t.line,
              fmt::format("<gpu id=\"{}\"> <tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"{}\">: expected id >= 0, "
                          "send and recv -1 or another gpu of 0..{}, chan >= 0",
                          g, id, send, recv, chan, ranks_ - 1));
    if (tb_steps.count({g, id})) fail_at(origin_, t.line, fmt::format("gpu {} has two thread blocks with id {}", g, id));
    auto& list = tb_steps[{g, id}];
    for (const XmlElement& s : t.children) {
      if (s.name != "step")
        fail_at(origin_, s.line, fmt::format("<{}> inside <gpu id=\"{}\"> <tb id=\"{}\">: expected <step>", s.name, g, id));
      Step x;
      x.gpu = g, x.tb = id, x.chan = chan, x.line = s.line;
      x.s = int_attr(origin_, s, "s");
      x.type = str_attr(origin_, s, "type");
      if (x.s != static_cast<int>(list.size()))
        fail_at(origin_, s.line,
                fmt::format("<gpu id=\"{}\"> <tb id=\"{}\"> step s=\"{}\": steps of a thread block are numbered 0, "
                            "1, ... in order; expected s=\"{}\"",
                            g, id, x.s, list.size()));
      x.depid = int_attr(origin_, s, "depid", -1);
      x.deps = int_attr(origin_, s, "deps", -1);
      if (s.attrs.count("hasdep")) x.hasdep = int_attr(origin_, s, "hasdep");
      if (x.hasdep && *x.hasdep != 0 && *x.hasdep != 1)
        fail_at(origin_, s.line, fmt::format("{} hasdep=\"{}\": expected 0 or 1", element(x), *x.hasdep));
      const int sid = static_cast<int>(steps.size());
      if (x.type != "nop") read_transfer(x, s, t, send, recv, declared, sid);
      list.push_back(sid);
      steps.push_back(x);
    }
  }

  Buffer buffer(const Step& x, const XmlElement& e, const char* key) {
    const std::string b = str_attr(origin_, e, key);
    if (b == "i") return Buffer::input;
    if (b == "o") return Buffer::output;
    if (b == "s") return Buffer::scratch;
    fail_at(origin_, e.line, fmt::format("{} {}=\"{}\": expected i, o or s", element(x), key, b));
  }

  // A local operand within what its GPU declares, as MSCCL's executor checks.
  void check_bounds(const Step& x, Buffer b, int off, const char* which, const Declared& declared) {
    const std::optional<int> size = declared.chunks[static_cast<int>(b)];
    if (off < 0 || (size && off + x.cnt > *size))
      fail_at(origin_, x.line,
              fmt::format("{} {}buf=\"{}\" {}off=\"{}\" cnt=\"{}\" is past the end of what <gpu id=\"{}\"> (line {}) "
                          "declares, {}=\"{}\": fix {}off or raise {}",
                          element(x), which, msccl_buffer_letter(b), which, off, x.cnt, x.gpu, declared.line,
                          buffer_attr(b), size.value_or(0), which, buffer_attr(b)));
  }

  void read_transfer(Step& x, const XmlElement& s, const XmlElement& t, int send, int recv, const Declared& declared,
                     int sid) {
    if (!x.sends() && !x.receives() && !x.local())
      fail_at(origin_, s.line,
              fmt::format("{} type=\"{}\": expected s, r, rcs, rrs, rrc, rrcs, cpy, re or nop", element(x), x.type));
    x.srcbuf = buffer(x, s, "srcbuf");
    x.dstbuf = buffer(x, s, "dstbuf");
    x.srcoff = int_attr(origin_, s, "srcoff");
    x.dstoff = int_attr(origin_, s, "dstoff");
    x.cnt = int_attr(origin_, s, "cnt");
    if (x.cnt < 1 || x.cnt > 4096)
      fail_at(origin_, s.line, fmt::format("{} cnt=\"{}\": expected 1 or more chunks", element(x), x.cnt));
    if (x.local_src()) check_bounds(x, x.srcbuf, x.srcoff, "src", declared);
    if (x.local_dst()) check_bounds(x, x.dstbuf, x.dstoff, "dst", declared);
    // One thread block per connection and channel carries its steps, in order.
    auto connect = [&](bool sending, int peer) {
      if (peer < 0)
        fail_at(origin_, s.line,
                fmt::format("{}: a '{}' step in a thread block without a {} peer: set the <tb>'s {}", element(x),
                            x.type, sending ? "send" : "recv", sending ? "send" : "recv"));
      const auto key = sending ? std::tuple{x.gpu, peer, x.chan} : std::tuple{peer, x.gpu, x.chan};
      auto& blocks = sending ? send_block_ : recv_block_;
      if (auto [it, fresh] = blocks.emplace(key, x.tb); !fresh && it->second != x.tb)
        fail_at(origin_, t.line,
                fmt::format("gpu {}: thread blocks {} and {} both {} gpu {} on channel {}", x.gpu, it->second, x.tb,
                            sending ? "send to" : "receive from", peer, x.chan));
      (sending ? sends : recvs)[key].push_back(sid);
    };
    if (x.sends()) connect(true, send);
    if (x.receives()) connect(false, recv);
  }

  std::string_view origin_;
  int ranks_;
  std::map<std::tuple<int, int, int>, int> send_block_, recv_block_;
};

// The steps in an order the program could run in: thread-block order, named dependences, each receive after its
// matching send (matched_send[receive] = send). A cycle is a deadlock.
std::vector<int> order_steps(std::string_view origin, const StepReader& r, std::vector<int>& matched_send) {
  const std::vector<Step>& steps = r.steps;
  const int total = static_cast<int>(steps.size());
  std::vector<std::vector<int>> next(total);
  matched_send.assign(total, -1);
  for (const auto& [key, list] : r.tb_steps)
    for (std::size_t i = 0; i + 1 < list.size(); ++i) next[list[i]].push_back(list[i + 1]);
  for (int s = 0; s < total; ++s) {
    const Step& x = steps[s];
    if (x.depid < 0) continue;
    const auto it = r.tb_steps.find({x.gpu, x.depid});
    if (it == r.tb_steps.end() || x.deps < 0 || x.deps >= static_cast<int>(it->second.size()))
      fail_at(origin, x.line,
              fmt::format("{} depid=\"{}\" deps=\"{}\" names no step of gpu {}: depid is a <tb> id of this gpu, deps a "
                          "step s of it",
                          element(x), x.depid, x.deps, x.gpu));
    const Step& on = steps[it->second[x.deps]];
    if (on.hasdep == 0)
      fail_at(origin, on.line,
              fmt::format("{} has hasdep=\"0\" but {} (line {}) waits on it: MSCCL's executor signals only steps with "
                          "hasdep=\"1\", so that step would wait forever: set hasdep=\"1\"",
                          element(on), element(x), x.line));
    next[it->second[x.deps]].push_back(s);
  }
  for (const auto& [key, list] : r.sends) {
    const auto q = r.recvs.find(key);
    const std::size_t got = q == r.recvs.end() ? 0 : q->second.size();
    const auto [from, to, chan] = key;
    if (got != list.size())
      fail_at(origin, steps[list.front()].line,
              fmt::format("gpu {} sends {} times to gpu {} on channel {} but gpu {} receives {} times: every send "
                          "needs a receive (r, rcs, rrs, rrc, rrcs) in gpu {}'s <tb recv=\"{}\" chan=\"{}\">",
                          from, list.size(), to, chan, to, got, to, from, chan));
    for (std::size_t k = 0; k < list.size(); ++k) {
      const int s = list[k], w = q->second[k];
      if (steps[s].cnt != steps[w].cnt)
        fail_at(origin, steps[w].line,
                fmt::format("{} receives cnt=\"{}\" chunks where the matching send {} (line {}) sends {}",
                            element(steps[w]), steps[w].cnt, element(steps[s]), steps[s].line, steps[s].cnt));
      matched_send[w] = s;
      next[s].push_back(w);
    }
  }
  for (const auto& [key, list] : r.recvs)
    if (!r.sends.count(key))
      fail_at(origin, steps[list.front()].line,
              fmt::format("{}: gpu {} receives from gpu {} on channel {}, which never sends there",
                          element(steps[list.front()]), std::get<1>(key), std::get<0>(key), std::get<2>(key)));
  std::vector<int> indegree(total, 0);
  for (int s = 0; s < total; ++s)
    for (int w : next[s]) ++indegree[w];
  // Receives first, then by step id: a send's data reaches its receive before the sender moves on, where it can.
  auto rank = [&](int s) { return std::pair{matched_send[s] < 0 ? 1 : 0, s}; };
  std::priority_queue<std::pair<int, int>, std::vector<std::pair<int, int>>, std::greater<>> ready;
  for (int s = 0; s < total; ++s)
    if (indegree[s] == 0) ready.push(rank(s));
  std::vector<int> order;
  while (!ready.empty()) {
    const int s = ready.top().second;
    ready.pop();
    order.push_back(s);
    for (int w : next[s])
      if (--indegree[w] == 0) ready.push(rank(w));
  }
  for (int s = 0; s < total && static_cast<int>(order.size()) < total; ++s)
    if (indegree[s] > 0)
      fail_at(origin, steps[s].line,
              fmt::format("deadlock: {} waits in a cycle of thread-block order, depid/deps dependences and "
                          "send/receive matches: break the cycle",
                          element(steps[s])));
  return order;
}

}  // namespace

Program from_msccl_xml(std::string_view text, std::string_view origin) {
  const XmlElement algo = read_xml(text, origin);
  if (algo.name != "algo")
    fail_at(origin, algo.line, fmt::format("the root element is <{}>, expected <algo>", algo.name));
  std::vector<const XmlElement*> gpus;
  for (const XmlElement& e : algo.children) {
    if (e.name != "gpu") fail_at(origin, e.line, fmt::format("<{}> inside <algo>: expected <gpu>", e.name));
    gpus.push_back(&e);
  }
  const Header h = read_header(origin, algo, static_cast<int>(gpus.size()));
  const int n = h.ranks;
  std::vector<const XmlElement*> by_id(n, nullptr);
  for (const XmlElement* g : gpus) {
    const int id = int_attr(origin, *g, "id");
    if (id < 0 || id >= n || by_id[id])
      fail_at(origin, g->line, fmt::format("gpu id {} is out of 0..{} or repeated", id, n - 1));
    by_id[id] = g;
  }
  MscclLayout layout;
  Program p = make_program(origin, h, by_id, algo, layout);
  StepReader reader(origin, n);
  int declared_scratch = 0;
  for (int g = 0; g < n; ++g) {
    reader.read_gpu(g, *by_id[g]);
    declared_scratch = std::max(declared_scratch, int_attr(origin, *by_id[g], "s_chunks", 0));
  }
  std::vector<int> matched_send;
  const std::vector<int> order = order_steps(origin, reader, matched_send);

  // Statements in that order, through the layout. An rrs step's sum (its src (op) what it received) is sent on
  // without being stored: it is kept in a scratch slot of its own after the XML's scratch and the in-place area.
  layout.scratch_base = declared_scratch;
  std::vector<int> spare(n, declared_scratch + (h.inplace && h.coll == MscclColl::reduce_scatter ? n * layout.chunks : 0));
  auto add = [&](OpKind kind, ChunkRef src, ChunkRef dst, const Step* at) {
    try {
      p.add(kind, src, dst, Hints{at ? at->chan : 0, {}}, at ? at->line : algo.line);
    } catch (const Error& e) {
      fail_at(origin, at ? at->line : algo.line, at ? element(*at) + ": " + e.what() : e.what());
    }
  };
  std::map<std::tuple<int, Buffer, int>, int> first_channel;  // (rank, buffer, index) -> channel of its first use
  for (int s : order) {
    const Step& x = reader.steps[s];
    auto mark = [&](Buffer b, int off) {
      const ChunkRef c = layout.at(x.gpu, b, off, x.cnt);
      for (int k = 0; k < c.count; ++k) first_channel.emplace(std::tuple{c.rank, c.buffer, c.index + k}, x.chan);
    };
    if (x.type != "nop" && x.local_src()) mark(x.srcbuf, x.srcoff);
    if (x.type != "nop" && x.local_dst()) mark(x.dstbuf, x.dstoff);
  }
  try {
    layout.add_prologue(p, algo.line, [&](const ChunkRef& c) {
      const auto it = first_channel.find({c.rank, c.buffer, c.index});
      return it == first_channel.end() ? 0 : it->second;
    });
  } catch (const Error& e) {
    fail_at(origin, algo.line, e.what());
  }
  std::vector<ChunkRef> payload(reader.steps.size());  // what each sending step sends
  for (int s : order) {
    const Step& x = reader.steps[s];
    if (x.type == "nop") continue;
    const ChunkRef src = layout.at(x.gpu, x.srcbuf, x.srcoff, x.cnt), dst = layout.at(x.gpu, x.dstbuf, x.dstoff, x.cnt);
    if (x.type == "cpy") add(OpKind::copy, src, dst, &x);
    if (x.type == "re") add(OpKind::reduce, src, dst, &x);
    if (x.type == "s") payload[s] = src;
    if (matched_send[s] < 0) continue;
    const ChunkRef remote = payload[matched_send[s]];
    if (x.type == "r" || x.type == "rcs") {
      add(OpKind::copy, remote, dst, &x);
      payload[s] = dst;
    } else if (x.type == "rrs") {
      const ChunkRef sum{x.gpu, Buffer::scratch, spare[x.gpu], x.cnt};
      spare[x.gpu] += x.cnt;
      add(OpKind::copy, src, sum, &x);
      add(OpKind::reduce, remote, sum, &x);
      payload[s] = sum;
    } else {  // rrc, rrcs: dst = local src (op) received
      if (!(src == dst)) add(OpKind::copy, src, dst, &x);
      add(OpKind::reduce, remote, dst, &x);
      payload[s] = dst;
    }
  }
  layout.add_epilogue(p, algo.line);
  p.set_runs_in_place(h.inplace && h.coll != MscclColl::custom);
  return p;
}

}  // namespace canopy::algo
