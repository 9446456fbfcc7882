// read_topo: takes .topo text, returns a validated Topology. Each line is one statement; every problem found is
// reported at its line and column (up to kMaxErrors), then the whole input is rejected with one canopy::Error.
#include "topology/topo_reader.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "core/error.hpp"
#include "topology/topology_check.hpp"

namespace canopy {

namespace {

constexpr int kMaxErrors = 20;
constexpr int kMaxGpusStatement = 1024;
constexpr double kMaxGbps = 1e6;
constexpr std::uintmax_t kMaxFileBytes = 64u << 20;

struct Location {
  int line = 1;
  int column = 1;
};

struct Token {
  std::string_view text;
  Location at;
};

struct TooManyErrors {};

class Reader {
 public:
  Reader(std::string_view text, std::string_view origin) : text_(text), origin_(origin) {}

  Topology read() {
    try {
      read_lines();
      if (!topology_) {
        if (!has_errors()) error({1, 1}, "empty topology: the first statement must be 'topology NAME'");
      } else if (!has_errors()) {
        check_whole();
      }
    } catch (const TooManyErrors&) {
      errors_ += fmt::format("{}: error: too many errors ({}); stopping here\n", origin_, kMaxErrors);
    }
    if (has_errors()) {
      if (errors_.back() == '\n') errors_.pop_back();
      throw Error(errors_);
    }
    return std::move(*topology_);
  }

 private:
  bool has_errors() const { return error_count_ > 0; }

  void error(Location at, const std::string& message) {
    errors_ += fmt::format("{}:{}:{}: error: {}\n", origin_, at.line, at.column, message);
    if (++error_count_ >= kMaxErrors) throw TooManyErrors{};
  }

  void read_lines() {
    std::size_t start = 0;
    int line = 1;
    while (start <= text_.size()) {
      std::size_t end = text_.find('\n', start);
      if (end == std::string_view::npos) end = text_.size();
      read_line(text_.substr(start, end - start), line);
      start = end + 1;
      ++line;
    }
  }

  // Splits one line into tokens (comments stripped), rejecting control characters, then runs its statement.
  void read_line(std::string_view line, int number) {
    std::vector<Token> tokens;
    std::size_t i = 0;
    while (i < line.size()) {
      const char c = line[i];
      if (c == '#') break;
      if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
        ++i;
        continue;
      }
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        error({number, static_cast<int>(i) + 1},
              fmt::format("unexpected control character 0x{:02x}: .topo files are plain text", static_cast<int>(c)));
        return;
      }
      std::size_t j = i;
      while (j < line.size() && line[j] != '#' && static_cast<unsigned char>(line[j]) > 0x20 && line[j] != 0x7f) ++j;
      tokens.push_back({line.substr(i, j - i), {number, static_cast<int>(i) + 1}});
      i = j;
    }
    if (!tokens.empty()) statement(tokens);
  }

  void statement(const std::vector<Token>& t) {
    const std::string_view word = t[0].text;
    if (word == "topology") return topology_statement(t);
    if (word != "gpus" && word != "gpu" && word != "switch" && word != "link" && word != "arc" && word != "host") {
      return error(
          t[0].at,
          fmt::format("unknown statement '{}' (expected topology, gpus, gpu, switch, link, arc or host)", word));
    }
    if (!topology_) {
      if (!reported_missing_topology_) {
        reported_missing_topology_ = true;
        error(t[0].at, fmt::format("'{}' before the 'topology NAME' line: every file starts with 'topology NAME'",
                                   word));
      }
      return;
    }
    if (word == "gpus") return gpus_statement(t);
    if (word == "gpu" || word == "switch") return node_statement(t, word == "gpu" ? NodeKind::gpu : NodeKind::relay);
    if (word == "host") return host_statement(t);
    return link_statement(t, word == "link");
  }

  bool expect_words(const std::vector<Token>& t, std::size_t min, std::size_t max, std::string_view usage) {
    if (t.size() > max) {
      error(t[max].at, fmt::format("unexpected '{}': the statement is '{}'", t[max].text, usage));
      return false;
    }
    if (t.size() < min) {
      const Token& last = t.back();
      error({last.at.line, last.at.column + static_cast<int>(last.text.size())},
            fmt::format("missing {}: the statement is '{}'", usage_word(usage, t.size()), usage));
      return false;
    }
    return true;
  }

  // The `index`-th word of a usage string such as "link NODE NODE GBPS [KIND]".
  static std::string usage_word(std::string_view usage, std::size_t index) {
    std::istringstream words{std::string(usage)};
    std::string w;
    for (std::size_t i = 0; i <= index && words >> w;) {
      if (i == index) return w;
      ++i;
    }
    return "a word";
  }

  bool check_name(const Token& tok, const char* what) {
    if (auto why = invalid_name_reason(tok.text)) {
      error(tok.at, fmt::format("invalid {} '{}': {}", what, tok.text, *why));
      return false;
    }
    return true;
  }

  void topology_statement(const std::vector<Token>& t) {
    if (topology_) return error(t[0].at, fmt::format("a second 'topology' line: the name is already '{}' (line {})",
                                                     topology_->name(), topology_at_.line));
    if (!expect_words(t, 2, 2, "topology NAME") || !check_name(t[1], "topology name")) {
      topology_.emplace("invalid");  // keep reading to report later problems too
      topology_at_ = t[0].at;
      return;
    }
    topology_.emplace(std::string(t[1].text));
    topology_at_ = t[0].at;
  }

  void gpus_statement(const std::vector<Token>& t) {
    if (!expect_words(t, 2, 2, "gpus COUNT")) return;
    int count = 0;
    const auto [end, ec] = std::from_chars(t[1].text.data(), t[1].text.data() + t[1].text.size(), count);
    if (ec != std::errc() || end != t[1].text.data() + t[1].text.size() || count < 1 || count > kMaxGpusStatement) {
      return error(t[1].at,
                   fmt::format("gpus expects a count between 1 and {}, got '{}'", kMaxGpusStatement, t[1].text));
    }
    for (int i = 0; i < count; ++i) declare(fmt::format("gpu{}", i), NodeKind::gpu, t[1].at);
  }

  void node_statement(const std::vector<Token>& t, NodeKind kind) {
    const std::string usage = to_string(kind) + " NAME";
    if (!expect_words(t, 2, 2, usage) || !check_name(t[1], "node name")) return;
    declare(std::string(t[1].text), kind, t[1].at);
  }

  void declare(std::string name, NodeKind kind, Location at) {
    if (auto it = declared_at_.find(name); it != declared_at_.end()) {
      return error(at, fmt::format("duplicate name '{}' (first declared at {}:{})", name, it->second.line,
                                   it->second.column));
    }
    if (static_cast<int>(topology_->nodes().size()) >= Topology::kMaxNodes)
      return error(at, fmt::format("too many nodes: at most {} are supported", Topology::kMaxNodes));
    declared_at_.emplace(name, at);
    node_at_.push_back(at);
    if (kind == NodeKind::gpu)
      topology_->gpu(std::move(name));
    else
      topology_->relay(std::move(name));
  }

  // `gpu_only`: the statement takes a GPU, so an unknown name is to be declared with `gpu`.
  std::optional<NodeId> node_named(const Token& tok, bool gpu_only = false) {
    if (auto id = topology_->find(tok.text)) return id;
    if (invalid_name_reason(tok.text)) {
      check_name(tok, "node name");
    } else if (gpu_only) {
      error(tok.at, fmt::format("unknown node '{}': declare it before this line with 'gpu {}'", tok.text, tok.text));
    } else {
      error(tok.at, fmt::format("unknown node '{}': declare it before this line with 'gpu {}' or 'switch {}'",
                                tok.text, tok.text, tok.text));
    }
    return std::nullopt;
  }

  std::optional<double> bandwidth(const Token& tok) {
    double gbps = 0;
    const char* first = tok.text.data();
    const char* last = first + tok.text.size();
    const auto [end, ec] = std::from_chars(first, last, gbps);
    if (ec != std::errc() || end != last || !std::isfinite(gbps)) {
      error(tok.at, fmt::format("bandwidth must be a number of GB/s per direction (e.g. 25 or 12.5), got '{}'",
                                tok.text));
      return std::nullopt;
    }
    if (gbps <= 0 || gbps > kMaxGbps) {
      error(tok.at, fmt::format("bandwidth must be > 0 and at most {} GB/s, got '{}'", kMaxGbps, tok.text));
      return std::nullopt;
    }
    return gbps;
  }

  std::optional<double> latency(const Token& tok) {
    double us = 0;
    const char* first = tok.text.data();
    const char* last = first + tok.text.size();
    const auto [end, ec] = std::from_chars(first, last, us);
    if (ec != std::errc() || end != last || !std::isfinite(us)) {
      error(tok.at, fmt::format("latency must be a number of microseconds per hop (e.g. 0.7 or 2), got '{}'",
                                tok.text));
      return std::nullopt;
    }
    if (std::signbit(us) || us > kMaxLatencyUs) {
      error(tok.at, fmt::format("latency must be >= 0 and at most {} microseconds, got '{}'", kMaxLatencyUs,
                                tok.text));
      return std::nullopt;
    }
    return us;
  }

  // The words after GBPS: an optional KIND, then NAME=VALUE attributes (only `latency=MICROSECONDS` exists).
  // Returns false when any is wrong (each problem reported).
  bool link_options(const std::vector<Token>& t, std::string_view usage, Bandwidth& bw) {
    bool ok = true;
    std::optional<Token> first_latency;
    for (std::size_t i = 4; i < t.size(); ++i) {
      const Token& tok = t[i];
      const std::size_t eq = tok.text.find('=');
      if (eq == std::string_view::npos) {
        if (i == 4) {  // KIND
          if (check_name(tok, "link kind"))
            bw.kind = std::string(tok.text);
          else
            ok = false;
          continue;
        }
        if (t[4].text.find('=') != std::string_view::npos && !invalid_name_reason(tok.text)) {
          error(tok.at, fmt::format("unexpected '{}': KIND comes before attributes; the statement is '{}'", tok.text,
                                    usage));
        } else {
          error(tok.at, fmt::format("unexpected '{}': the statement is '{}'", tok.text, usage));
        }
        return false;
      }
      const std::string_view name = tok.text.substr(0, eq);
      const Token value{tok.text.substr(eq + 1), {tok.at.line, tok.at.column + static_cast<int>(eq) + 1}};
      if (name != "latency") {
        error(tok.at, fmt::format("unknown attribute '{}' in '{}': the only attribute is latency=MICROSECONDS",
                                  name, tok.text));
        ok = false;
        continue;
      }
      if (first_latency) {
        error(tok.at, fmt::format("latency given twice (first at {}:{}): a link has one latency",
                                  first_latency->at.line, first_latency->at.column));
        ok = false;
        continue;
      }
      first_latency = tok;
      if (const auto us = latency(value))
        bw.latency_us = *us;
      else
        ok = false;
    }
    return ok;
  }

  void link_statement(const std::vector<Token>& t, bool both_ways) {
    const char* usage = both_ways ? "link NODE NODE GBPS [KIND] [latency=MICROSECONDS]"
                                  : "arc FROM TO GBPS [KIND] [latency=MICROSECONDS]";
    if (!expect_words(t, 4, std::numeric_limits<std::size_t>::max(), usage)) return;
    const auto a = node_named(t[1]);
    const auto b = node_named(t[2]);
    const auto gbps = bandwidth(t[3]);
    Bandwidth bw;
    const bool options_ok = link_options(t, usage, bw);
    if (a && b && *a == *b) {
      return error(t[2].at, fmt::format("self-link: '{}' cannot link to itself", t[1].text));
    }
    if (!a || !b || !gbps || !options_ok) return;
    bw.gbps = *gbps;
    if (!latency_agrees(*a, *b, bw, t) || (both_ways && !latency_agrees(*b, *a, bw, t))) return;
    try {
      if (both_ways)
        topology_->link(*a, *b, bw);
      else
        topology_->arc(*a, *b, bw);
    } catch (const Error& e) {  // not expected: every check above comes first; still reported at its line
      return error(t[0].at, e.what());
    }
    if (bw.latency_us < 0) return;
    const Location at = latency_word(t)->at;
    latency_given_at_.try_emplace({a->index, b->index, bw.kind}, bw.latency_us, at);
    if (both_ways) latency_given_at_.try_emplace({b->index, a->index, bw.kind}, bw.latency_us, at);
  }

  // `host GPU GBPS [KIND]`: the GPU's path to pinned host memory, one per GPU (not a link of the graph).
  void host_statement(const std::vector<Token>& t) {
    const char* usage = "host GPU GBPS [KIND]";
    if (!expect_words(t, 3, 4, usage)) return;
    // An index, not an optional: GCC's -Wmaybe-uninitialized misreads an optional NodeId across the checks below.
    int gpu = -1;
    if (const std::optional<NodeId> named = node_named(t[1], /*gpu_only=*/true)) gpu = named->index;
    if (gpu >= 0 && topology_->node(NodeId{gpu}).kind != NodeKind::gpu) {
      error(t[1].at, fmt::format("'{}' is a switch: only a GPU has a host link (its copy engines' path to pinned host "
                                 "memory); name a GPU",
                                 t[1].text));
      gpu = -1;
    } else if (gpu >= 0) {  // recorded even when this statement has another problem: a repeat is an error anyway
      const auto [first, inserted] = host_given_at_.try_emplace(gpu, t[1].at);
      if (!inserted) {
        error(t[1].at, fmt::format("a second host link for '{}' (the first is at {}:{}): a GPU has one host link; "
                                   "give its total bandwidth once",
                                   t[1].text, first->second.line, first->second.column));
        gpu = -1;
      }
    }
    const auto gbps = bandwidth(t[2]);
    Bandwidth bw;
    bool kind_ok = true;
    if (t.size() == 4) {
      if (t[3].text.find('=') != std::string_view::npos) {
        error(t[3].at,
              fmt::format("unexpected '{}': a host link takes no attributes; the statement is '{}'", t[3].text, usage));
        kind_ok = false;
      } else if (check_name(t[3], "link kind")) {
        bw.kind = std::string(t[3].text);
      } else {
        kind_ok = false;
      }
    }
    if (gpu < 0 || !gbps || !kind_ok) return;
    bw.gbps = *gbps;
    try {
      topology_->host_link(NodeId{gpu}, bw);
    } catch (const Error& e) {  // not expected: every check above comes first; still reported at its line
      error(t[0].at, e.what());
    }
  }

  // A repeated link adds bandwidth to one arc, which has one latency: a second, different one is an error.
  bool latency_agrees(NodeId from, NodeId to, const Bandwidth& bw, const std::vector<Token>& t) {
    if (bw.latency_us < 0) return true;
    const auto it = latency_given_at_.find(std::make_tuple(from.index, to.index, bw.kind));
    if (it == latency_given_at_.end() || it->second.first == bw.latency_us) return true;
    const auto& [first_us, first_at] = it->second;
    error(latency_word(t)->at,
          fmt::format("latency {} differs from the {} given at {}:{} for {} -> {}{}: repeated links of one kind add "
                      "bandwidth and must give the same latency (or none)",
                      bw.latency_us, first_us, first_at.line, first_at.column, topology_->node(from).name,
                      topology_->node(to).name, bw.kind.empty() ? "" : " (" + bw.kind + ")"));
    return false;
  }

  static const Token* latency_word(const std::vector<Token>& t) {
    for (std::size_t i = 4; i < t.size(); ++i)
      if (t[i].text.starts_with("latency=")) return &t[i];
    return nullptr;
  }

  void check_whole() {
    for (const TopologyProblem& p : find_problems(*topology_))
      error(p.node ? node_at_[p.node->index] : topology_at_, p.message);
  }

  std::string_view text_;
  std::string_view origin_;
  std::optional<Topology> topology_;
  Location topology_at_;
  bool reported_missing_topology_ = false;
  std::map<std::string, Location, std::less<>> declared_at_;
  std::vector<Location> node_at_;  // by node index
  std::map<std::tuple<int, int, std::string>, std::pair<double, Location>> latency_given_at_;  // (from, to, kind)
  std::map<int, Location> host_given_at_;  // by GPU index: where its `host` statement names it
  std::string errors_;
  int error_count_ = 0;
};

}  // namespace

Topology read_topo(std::string_view text, std::string_view origin) { return Reader(text, origin).read(); }

Topology read_topo_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(fmt::format("cannot read topology file '{}': {}", path.string(),
                            std::filesystem::exists(path, ec) ? "not a regular file" : "no such file"));
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(fmt::format("cannot read topology file '{}': {}", path.string(), ec.message()));
  if (size > kMaxFileBytes)
    throw Error(fmt::format("topology file '{}' is {} bytes; at most {} are read", path.string(), size, kMaxFileBytes));
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw Error(fmt::format("cannot read topology file '{}'", path.string()));
  return read_topo(text.str(), path.string());
}

}  // namespace canopy
