// CallSignature: made from a call, its program's identity hashed, and the texts of a mismatch (see call_signature.hpp).
#include "runtime/comm/call_signature.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "codegen/lower_program.hpp"
#include "dsl/algorithm.hpp"
#include "runtime/call/collective_call.hpp"

namespace canopy {

CallSignature call_signature(const CollectiveCall& c, std::uint64_t call, std::uint64_t program_hash) {
  CallSignature s;
  s.call = call;
  s.count = c.count;
  s.dtype = c.dtype;
  if (c.program) {
    s.program = program_hash;
    s.program_reduces = c.program->reduces();
    if (s.program_reduces) s.op = c.op;
    const std::string& name = c.program->name();
    const std::size_t n = std::min(name.size(), s.program_name.size() - 1);
    std::copy_n(name.data(), n, s.program_name.data());
    return s;
  }
  s.collective = c.collective;
  if (reduces(c.collective)) s.op = c.op;
  if (has_root(c.collective)) s.root = c.root;
  return s;
}

std::uint64_t program_identity(const algo::Program& p) {
  const std::string key = program_key(p);  // sha256, hex
  std::uint64_t h = 0;
  (void)std::from_chars(key.data(), key.data() + std::min<std::size_t>(16, key.size()), h, 16);
  return h ? h : 1;  // 0 means "not a program"
}

std::string describe_call(const CallSignature& s) {
  if (s.program)
    return fmt::format("call {}: algorithm {} count {} {}{} (program {:016x})", s.call, s.program_name.data(), s.count,
                       to_string(s.dtype), s.program_reduces ? " " + to_string(s.op) : "", s.program);
  return fmt::format("call {}: {} count {} {}{}{}", s.call, call_name(s.collective), s.count, to_string(s.dtype),
                     reduces(s.collective) ? " " + to_string(s.op) : "",
                     has_root(s.collective) ? fmt::format(" root {}", s.root) : "");
}

std::string mismatched_calls_message(const std::string& a, const std::string& a_call, const std::string& b,
                                     const std::string& b_call) {
  return fmt::format("the processes made different calls: {} made \"{}\" but {} made \"{}\": every rank must make "
                     "the same collective calls, with the same count, type, operator and root, in the same order",
                     a, a_call, b, b_call);
}

std::string mismatched_calls_message(int a, const CallSignature& sa, int b, const CallSignature& sb,
                                     const std::function<std::string(int)>& name) {
  if (b < a) return mismatched_calls_message(b, sb, a, sa, name);
  return mismatched_calls_message(name(a), describe_call(sa), name(b), describe_call(sb));
}

}  // namespace canopy
