// Naming collective specs: their cache key and their text in logs and errors.
#include "runtime/comm/collective_spec.hpp"

#include <fmt/format.h>

#include "runtime/call/collective_call.hpp"

namespace canopy {

bool plan_free(const CollectiveSpec& s) { return s.low_latency || s.ll128 || s.direct; }

// 0 small, 1 large, 2 huge (a huge spec is large too).
static int message_class(const CollectiveSpec& s) { return s.large ? (s.huge ? 2 : 1) : 0; }

SpecKey spec_key(const CollectiveSpec& s) {
  const int dtype = static_cast<int>(s.dtype);
  if (s.program)
    return {-1, dtype, s.program->reduces() ? static_cast<int>(s.op) : 0, 0, message_class(s), 0,
            fmt::format("program@{}", fmt::ptr(s.program.get()))};
  const int op = reduces(s.collective) ? static_cast<int>(s.op) : 0;
  const int root = has_root(s.collective) ? s.root : 0;
  // A planned kernel's chunk, when not the communicator's: the program-key slot names it.
  const bool planned = !plan_free(s);
  std::string chunk = s.chunk_bytes > 0 && planned ? fmt::format("chunk {}", s.chunk_bytes) : "";
  return {static_cast<int>(s.collective),
          dtype,
          op,
          root,
          planned ? message_class(s) : 0,
          s.low_latency ? (s.two_shot ? 4 : 1)
          : s.direct    ? (s.own_buffers ? (s.two_shot ? 8 : 7) : s.two_shot ? 5 : 2)
          : s.ll128     ? 3
                        : (s.own_buffers ? 6 : 0),
          chunk};
}

bool same_program(const algo::Program& a, const algo::Program& b) {
  if (&a == &b) return true;
  if (a.name() != b.name() || a.goal() != b.goal() || a.ranks() != b.ranks() || a.chunks() != b.chunks() ||
      a.root() != b.root() || a.ops().size() != b.ops().size())
    return false;
  for (algo::Buffer buffer : {algo::Buffer::input, algo::Buffer::output})
    if (a.buffer_chunks(buffer) != b.buffer_chunks(buffer)) return false;
  for (std::size_t k = 0; k < a.ops().size(); ++k) {
    const algo::Op &x = a.ops()[k], &y = b.ops()[k];
    if (x.kind != y.kind || !(x.src == y.src) || !(x.dst == y.dst) || x.hints.channel != y.hints.channel ||
        x.hints.step != y.hints.step || x.line != y.line)
      return false;
  }
  return true;
}

std::string spec_text(const CollectiveSpec& s) {
  if (s.program) {
    std::string text = fmt::format("algorithm {} {}", s.program->name(), to_string(s.dtype));
    if (s.program->reduces()) text += " " + to_string(s.op);
    return s.large ? text + (s.huge ? " (huge messages)" : " (large messages)") : text;
  }
  std::string text = fmt::format("{} {}", call_name(s.collective), to_string(s.dtype));
  if (reduces(s.collective)) text += " " + to_string(s.op);
  if (has_root(s.collective)) text += fmt::format(" root {}", s.root);
  if (s.low_latency)
    text += s.two_shot ? " (low latency, two-shot)" : " (low latency)";
  else if (s.ll128)
    text += " (LL128)";
  else if (s.direct)
    text += s.two_shot ? " (direct, two-shot)" : " (direct)";
  else if (s.large)
    text += s.huge ? " (huge messages)" : " (large messages)";
  if (s.chunk_bytes > 0 && !plan_free(s)) text += fmt::format(", chunk {}", format_byte_size(s.chunk_bytes));
  if (s.own_buffers) text += s.direct ? ", inbox" : ", own buffers only";
  if (s.peer_buffers) text += ", on the callers' buffers across processes";
  return text;
}

}  // namespace canopy
