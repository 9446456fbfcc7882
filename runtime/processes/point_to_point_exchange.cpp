// The agreement of a group of sends and receives across processes (point_to_point_exchange.hpp): each process's part
// as text, one op a line ("send 0 1 7 f32 1": kind, rank, peer, count, type, whether a buffer is given) or
// "refused <why>", read back into the whole group, matched, and planned for one process.
#include "runtime/processes/point_to_point_exchange.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <utility>

namespace canopy {

namespace {

constexpr const char* kPartHeader = "send_recv 1\n";  // the format's version: every process runs the same library
constexpr const char* kPartRefused = "refused ";

// Where another process gave a buffer: never read or written here (only the transfers of this process's own ranks
// use their buffers), only told apart from null.
char elsewhere_buffer;

std::string rank_span(int first, int own) {
  return own == 1 ? fmt::format("rank {}", first) : fmt::format("ranks {}..{}", first, first + own - 1);
}

}  // namespace

std::string own_part_refusal(std::span<const PointToPoint> ops, int first, int own,
                             std::span<const int> process_of_rank,
                             const std::function<std::string(int)>& name,
                             const std::function<Status(std::span<const PointToPoint>)>& check_streams) {
  const int ranks = static_cast<int>(process_of_rank.size());
  bool in_range = true;
  for (std::size_t at = 0; at < ops.size(); ++at) {
    const PointToPoint& op = ops[at];
    if (op.rank < 0 || op.rank >= ranks || op.peer < 0 || op.peer >= ranks) {
      in_range = false;  // the matcher names it, in every process alike
      continue;
    }
    if (op.rank >= first && op.rank < first + own) continue;
    return fmt::format("send_recv: op {} ({} of rank {}) is issued by rank {}, which {} holds: each process passes "
                       "only its own ranks' ops (this one holds {}), and the process holding rank {} passes that op",
                       at, kind_name(op.kind), op.rank, op.rank, name(process_of_rank[op.rank]),
                       rank_span(first, own), op.rank);
  }
  if (!in_range) return "";
  const Status s = check_streams(ops);
  return s.ok() ? "" : s.message();
}

std::string encode_point_to_point(std::span<const PointToPoint> ops, const std::string& refusal) {
  std::string out = kPartHeader;
  if (!refusal.empty()) return out + kPartRefused + refusal;
  for (const PointToPoint& op : ops)
    out += fmt::format("{} {} {} {} {} {}\n", kind_name(op.kind), op.rank, op.peer, op.count, to_string(op.dtype),
                       op.buffer ? 1 : 0);
  return out;
}

namespace {

// One process's part read back: its ops, or *refusal.
Status decode_part(const std::string& text, int process, std::vector<PointToPoint>* ops, std::string* refusal) {
  const auto unreadable = [&](const std::string& why) {
    return Status(StatusCode::remote_error,
                  fmt::format("send_recv: process {}'s part of the group cannot be read ({}): every process must run "
                              "the same Canopy library",
                              process, why));
  };
  if (text.rfind(kPartHeader, 0) != 0) return unreadable("no header");
  const std::string body = text.substr(std::string(kPartHeader).size());
  if (body.rfind(kPartRefused, 0) == 0) {
    *refusal = body.substr(std::string(kPartRefused).size());
    return Status();
  }
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind, dtype;
    PointToPoint op;
    int given = 0;
    if (!(fields >> kind >> op.rank >> op.peer >> op.count >> dtype >> given) || (kind != "send" && kind != "recv"))
      return unreadable(fmt::format("line '{}'", line));
    const std::optional<DataType> t = parse_data_type(dtype);
    if (!t) return unreadable(fmt::format("type '{}'", dtype));
    op.kind = kind == "send" ? PointToPointKind::send : PointToPointKind::recv;
    op.dtype = *t;
    op.buffer = given ? &elsewhere_buffer : nullptr;
    ops->push_back(op);
  }
  return Status();
}

}  // namespace

Status assemble_group(std::span<const std::string> parts, int self, std::span<const PointToPoint> mine,
                      const std::function<std::string(int)>& name, WholeGroup* out) {
  out->ops.clear();
  out->first_op.clear();
  std::vector<std::vector<PointToPoint>> decoded(parts.size());
  std::vector<std::string> refusals(parts.size());
  for (std::size_t p = 0; p < parts.size(); ++p)
    if (Status s = decode_part(parts[p], static_cast<int>(p), &decoded[p], &refusals[p]); !s.ok()) return s;
  if (!refusals[self].empty()) return Status(StatusCode::invalid_argument, refusals[self]);
  for (std::size_t p = 0; p < parts.size(); ++p)
    if (!refusals[p].empty())
      return Status(StatusCode::invalid_argument,
                    fmt::format("send_recv: {} refused its part of this group, so every process refuses the group: {}",
                                name(static_cast<int>(p)), refusals[p]));
  if (decoded[self].size() != mine.size())
    return Status(StatusCode::internal, fmt::format("send_recv: this process's part holds {} ops, not its {}",
                                                    decoded[self].size(), mine.size()));
  for (std::size_t p = 0; p < parts.size(); ++p) {
    out->first_op.push_back(out->ops.size());
    if (static_cast<int>(p) == self)
      out->ops.insert(out->ops.end(), mine.begin(), mine.end());
    else
      out->ops.insert(out->ops.end(), decoded[p].begin(), decoded[p].end());
  }
  out->first_op.push_back(out->ops.size());
  return Status();
}

Status match_whole_group(const WholeGroup& group, int ranks, std::vector<Transfer>* out) {
  const Status s = match_point_to_point(group.ops, ranks, out);
  if (s.ok()) return s;
  std::string numbering;
  for (std::size_t p = 0; p + 1 < group.first_op.size(); ++p) {
    const std::size_t a = group.first_op[p], b = group.first_op[p + 1];
    numbering += fmt::format("{}process {}'s {}", p ? ", " : "", p,
                             a == b ? std::string("none") : b - a == 1 ? fmt::format("op {}", a)
                                                                        : fmt::format("ops {}..{}", a, b - 1));
  }
  return Status(s.code(), fmt::format("{} (across processes the group's ops are numbered in process order: {})",
                                      s.message(), numbering));
}

PointToPointPlan plan_point_to_point(std::span<const Transfer> transfers, std::span<const int> process_of_rank,
                                     int self) {
  PointToPointPlan plan;
  const int processes = process_of_rank.empty()
                            ? 0
                            : *std::max_element(process_of_rank.begin(), process_of_rank.end()) + 1;
  plan.reads_from.assign(processes, 0);
  plan.readers.assign(processes, 0);
  std::vector<std::uint64_t> staged(process_of_rank.size(), 0);  // per sender rank: bytes laid out so far
  for (const Transfer& t : transfers) {
    if (t.bytes() == 0) continue;
    const int from = process_of_rank[t.sender], to = process_of_rank[t.receiver];
    if (from == to) {
      if (from == self) plan.local.push_back(t);
      continue;
    }
    const StagedTransfer placed{t, staged[t.sender]};
    staged[t.sender] += (t.bytes() + kStagedAlignment - 1) / kStagedAlignment * kStagedAlignment;
    plan.staging_bytes = std::max(plan.staging_bytes, staged[t.sender]);
    if (from == self) {
      plan.sends.push_back(placed);
      plan.readers[to] = 1;
    }
    if (to == self) {
      plan.receives.push_back(placed);
      plan.reads_from[from] = 1;
    }
  }
  return plan;
}

}  // namespace canopy
