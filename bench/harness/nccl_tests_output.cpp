// parse_nccl_tests_output: nccl-tests' stdout -> runs, rows, failure lines and skipped lines (see the header).
#include "bench/harness/nccl_tests_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <type_traits>

#include "core/error.hpp"

namespace canopy {
namespace {

constexpr std::string_view kColumns =
    "size count type redop root, then time algbw busbw #wrong out of place and again in place";

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The line as it goes into a message: at most 100 characters, control bytes as '?'.
std::string excerpt(std::string_view line) {
  std::string out(line.substr(0, 100));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) c = '?';
  return line.size() > 100 ? out + "..." : out;
}

template <typename T>
std::optional<T> number(std::string_view word) {
  T value{};
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || end != word.data() + word.size()) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>)
    if (!std::isfinite(value)) return std::nullopt;
  return value;
}

// A count the parameters line gives: a positive integer, else nullopt.
std::optional<int> positive(std::string_view word) {
  const std::optional<int> n = number<int>(word);
  return n && *n > 0 ? n : std::nullopt;
}

// The parameters line's "iters: N" (nccl-tests' -n), not its "warmup iters: N" or "agg iters: N"; nullopt where
// absent or not a positive count.
std::optional<int> timed_iters(std::string_view parameters) {
  const std::vector<std::string_view> w = words(parameters);
  for (std::size_t i = 0; i + 1 < w.size(); ++i) {
    if (w[i] != "iters:" || (i > 0 && (w[i - 1] == "warmup" || w[i - 1] == "agg"))) continue;
    return positive(w[i + 1]);
  }
  return std::nullopt;
}

// The parameters line's "nThread N"; nullopt where absent or not a positive count.
std::optional<int> thread_count(std::string_view parameters) {
  const std::vector<std::string_view> w = words(parameters);
  for (std::size_t i = 0; i + 1 < w.size(); ++i)
    if (w[i] == "nThread") return positive(w[i + 1]);
  return std::nullopt;
}

class RowParser {
 public:
  RowParser(std::string_view line, int line_number, const std::string& source)
      : line_(line), line_number_(line_number), source_(source) {}

  NcclTestsRow parse() const {
    const std::vector<std::string_view> w = words(line_);
    if (w.size() != 13)
      fail(fmt::format("a data row has 13 columns ({}); this one has {}", kColumns, w.size()),
           w.size() < 13 ? "a row cut short is a log that ended early (a killed or timed-out run): rerun it, or delete "
                           "the line to read the rest"
                         : "two outputs written into one line (several processes, or a message inside a row) cannot "
                           "be read apart: rerun with one process printing, or delete the line");
    NcclTestsRow row;
    row.line = line_number_;
    row.bytes = whole(w[0], "size");
    row.count = whole(w[1], "count");
    row.type = name(w[2], "type");
    row.redop = name(w[3], "redop");
    const auto root = number<int>(w[4]);
    if (!root || *root < -1) fail(fmt::format("root '{}' is not a rank or -1", w[4]), "");
    row.root = *root;
    row.out_of_place = timing(w, 5, "out-of-place");
    row.in_place = timing(w, 9, "in-place");
    return row;
  }

 private:
  [[noreturn]] void fail(const std::string& what, std::string_view fix) const {
    throw Error(fmt::format("{}:{}: error: {}: '{}'{}{}", source_, line_number_, what, excerpt(trim(line_)),
                            fix.empty() ? "" : "; ", fix));
  }

  std::uint64_t whole(std::string_view word, std::string_view column) const {
    const auto v = number<std::uint64_t>(word);
    if (!v) fail(fmt::format("{} '{}' is not a whole number (columns: {})", column, word, kColumns), "");
    return *v;
  }

  std::string name(std::string_view word, std::string_view column) const {
    bool ok = !word.empty() && std::isalpha(static_cast<unsigned char>(word[0]));
    for (char c : word) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ok) fail(fmt::format("{} '{}' is not a name (columns: {})", column, word, kColumns), "");
    return std::string(word);
  }

  NcclTestsTiming timing(const std::vector<std::string_view>& w, std::size_t at, std::string_view layout) const {
    NcclTestsTiming t;
    const std::array<std::string_view, 3> columns = {"time", "algbw", "busbw"};
    std::array<double*, 3> into = {&t.time_us, &t.algbw_gbps, &t.busbw_gbps};
    for (std::size_t i = 0; i < 3; ++i) {
      const auto v = number<double>(w[at + i]);
      if (!v || *v < 0)
        fail(fmt::format("{} {} '{}' is not a non-negative number (columns: {})", layout, columns[i], w[at + i],
                         kColumns),
             "");
      *into[i] = *v;
    }
    const std::string_view wrong = w[at + 3];
    if (wrong == "N/A") return t;
    // "%5g" prints 0, 12, 1e+06; older nccl-tests' "%5.0le" prints 0e+00.
    const auto v = number<double>(wrong);
    if (!v || *v < 0 || *v != std::floor(*v) || *v > 9.0e18)
      fail(fmt::format("{} #wrong '{}' is neither a count nor N/A (columns: {})", layout, wrong, kColumns), "");
    t.wrong = static_cast<std::int64_t>(*v);
    return t;
  }

  std::string_view line_;
  int line_number_;
  const std::string& source_;
};

// Whether the run already holds what `starting` would set again: then a new run begins.
bool started(const NcclTestsRun& r) { return !r.version_line.empty() || !r.collective.empty() || !r.rows.empty(); }

}  // namespace

int NcclTestsRun::timers() const {
  std::set<std::string_view> pids;
  for (const std::string& d : devices) {
    const std::vector<std::string_view> w = words(d);
    for (std::size_t i = 0; i + 1 < w.size(); ++i)
      if (w[i] == "Pid") pids.insert(w[i + 1]);
  }
  return std::max<int>(1, static_cast<int>(pids.size())) * threads.value_or(1);
}

bool is_nccl_tests_failure_line(std::string_view line) {
  static constexpr std::string_view kMarkers[] = {
      "Test NCCL failure", "Test CUDA failure", "Test failure",    "Segmentation fault",
      "received signal",   "exited on signal",  "non-zero status", "non-zero exit",
      "NCCL WARN",         "Aborted",           "core dumped"};
  for (std::string_view m : kMarkers)
    if (line.find(m) != std::string_view::npos) return true;
  return false;
}

NcclTestsOutput parse_nccl_tests_output(std::string_view text, const std::string& source) {
  NcclTestsOutput out;
  bool in_table = false;
  const auto current = [&](bool fresh) -> NcclTestsRun& {
    if (out.runs.empty() || fresh) out.runs.emplace_back();
    return out.runs.back();
  };
  int line_number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    const std::string_view line = trim(raw);
    if (line.empty()) continue;
    if (line[0] != '#') {
      if (in_table && std::isdigit(static_cast<unsigned char>(line[0]))) {
        NcclTestsRow row = RowParser(raw, line_number, source).parse();
        current(false).rows.push_back(std::move(row));
        continue;
      }
      NcclTestsNote note{line_number, std::string(trim(raw))};
      (is_nccl_tests_failure_line(line) ? out.failures : out.skipped).push_back(std::move(note));
      continue;
    }
    const std::string_view body = trim(line.substr(1));
    if (starts_with(body, "nccl-tests version")) {
      NcclTestsRun& r = current(out.runs.empty() || started(out.runs.back()));
      r.first_line = line_number;
      r.version_line = std::string(body);
      const std::vector<std::string_view> w = words(body);
      if (w.size() >= 3) r.version = std::string(w[2]);
      for (std::string_view word : w) {
        if (starts_with(word, "nccl-headers=")) r.nccl_headers = std::string(word.substr(13));
        if (starts_with(word, "nccl-library=")) r.nccl_library = std::string(word.substr(13));
      }
      in_table = false;
    } else if (starts_with(body, "Collective test starting:")) {
      const bool fresh = out.runs.empty() || !out.runs.back().collective.empty() || !out.runs.back().rows.empty();
      NcclTestsRun& r = current(fresh);
      if (r.first_line == 0) r.first_line = line_number;
      r.collective = std::string(trim(body.substr(25)));
      in_table = false;
    } else if (starts_with(body, "nThread ")) {
      NcclTestsRun& r = current(false);
      r.parameters = std::string(body);
      r.iters = timed_iters(body);
      r.threads = thread_count(body);
    } else if (starts_with(body, "Rank ")) {
      current(false).devices.emplace_back(body);
    } else if (const std::vector<std::string_view> w = words(body);
               w.size() >= 3 && w[0] == "size" && w[1] == "count" && w[2] == "type") {
      static constexpr std::array<std::string_view, 13> kHeader = {"size",  "count", "type",  "redop",  "root",
                                                                   "time",  "algbw", "busbw", "#wrong", "time",
                                                                   "algbw", "busbw", "#wrong"};
      if (!std::equal(w.begin(), w.end(), kHeader.begin(), kHeader.end()))
        throw Error(fmt::format(
            "{}:{}: error: the table's columns are '{}'; canopy reads the 13 columns nccl-tests 2.19 prints ({}): "
            "a different nccl-tests or a fork, whose rows cannot be read as those",
            source, line_number, excerpt(body), kColumns));
      NcclTestsRun& r = current(false);
      if (r.first_line == 0) r.first_line = line_number;
      in_table = true;
    } else if (starts_with(body, "Out of bounds values")) {
      const std::size_t colon = body.find(':');
      const std::vector<std::string_view> v = words(colon == std::string_view::npos ? "" : body.substr(colon + 1));
      NcclTestsRun& r = current(false);
      if (!v.empty()) r.out_of_bounds = number<std::int64_t>(v[0]);
      r.out_of_bounds_ok = v.size() >= 2 && v[1] == "OK";
      in_table = false;
    } else if (starts_with(body, "Avg bus bandwidth")) {
      const std::size_t colon = body.find(':');
      const std::vector<std::string_view> v = words(colon == std::string_view::npos ? "" : body.substr(colon + 1));
      if (!v.empty()) current(false).avg_busbw_gbps = number<double>(v[0]);
      in_table = false;
    } else if (starts_with(body, "Collective test concluded")) {
      current(false).concluded = true;
      in_table = false;
    }
    // Other '#' lines are nccl-tests' own decoration: "#", "# Using devices", the layout and unit lines.
  }
  return out;
}

}  // namespace canopy
