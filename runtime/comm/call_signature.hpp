// CallSignature: what every process of a multi-process communicator must pass alike to its k-th call (collective,
// count, type, operator, root; for an algorithm program, a hash of its identity) as a small plain struct, made and
// compared without allocating, so it can be published and checked on every call (call_counters.hpp); and the text
// of a mismatch, the same whether the shared pages or the bootstrap round trip (CANOPY_CHECK_CALLS=1) found it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "core/collective.hpp"
#include "core/data_type.hpp"

namespace canopy {

namespace algo {
class Program;
}
struct CollectiveCall;

struct CallSignature {
  std::uint64_t call = 0;  // the call number, from 1
  std::uint64_t count = 0;
  Collective collective = Collective::allreduce;  // a program's: allreduce (ignored)
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;    // sum where the call does not reduce
  std::int32_t root = 0;          // 0 where the call has no root
  std::uint64_t program = 0;      // an algorithm program's identity (a hash of its text); 0: not a program
  bool program_reduces = false;   // whether the program combines inputs (its operator is then shown)
  std::array<char, 32> program_name{};  // its name, cut to 31 bytes, NUL-terminated (only for the message)

  // The same call but for its number (the name aside: the program's hash covers it).
  bool same_call(const CallSignature& o) const {
    return count == o.count && collective == o.collective && dtype == o.dtype && op == o.op && root == o.root &&
           program == o.program;
  }
};

// Call number `call` of `c`, with what the call ignores set to its default (a non-rooted call's root, a copying
// call's operator, a program's collective and root), so that only what the kernels use is compared. `program_hash`:
// the hash of c.program's identity (program_identity), 0 when c.program is null.
CallSignature call_signature(const CollectiveCall& c, std::uint64_t call, std::uint64_t program_hash);
// The 64-bit hash of a program's identity: the first 8 bytes of its program_key (codegen/lower_program.hpp), never 0.
std::uint64_t program_identity(const algo::Program& p);

// "call 1: allreduce count 1028 f32 sum", "call 2: broadcast count 7 i32 root 1", "call 3: algorithm ring count 64
// f32 sum (program 0123456789abcdef)".
std::string describe_call(const CallSignature& s);
// The error of a mismatch: `a` and `b` name two processes ("process 0 (rank 0)"), `a_call` and `b_call` their calls
// (describe_call).
std::string mismatched_calls_message(const std::string& a, const std::string& a_call, const std::string& b,
                                     const std::string& b_call);
// The same for process `a`'s call `sa` and process `b`'s `sb`, the lower process first (so every process that finds
// the same pair says the same); `name(q)` names process q.
std::string mismatched_calls_message(int a, const CallSignature& sa, int b, const CallSignature& sb,
                                     const std::function<std::string(int)>& name);

}  // namespace canopy
