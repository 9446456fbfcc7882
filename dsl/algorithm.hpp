// The collective-algorithm language: a C++ program cuts every rank's input, output and scratch buffers into chunks
// and moves them with two statements, `copy` and `reduce`, each returning the chunk it wrote so chains read naturally
// (MSCCLang's model, embedded in C++):
//
//   canopy::algo::Program p("ring-allreduce", canopy::Collective::allreduce, /*ranks=*/4, /*chunks=*/4);
//   for (int i = 0; i < 4; ++i) {  // chunk i is summed around the ring, then sent round once more
//     auto at = [&](int s) { return (i + 1 + s) % 4; };
//     auto c = p.input(at(1), i).reduce(p.input(at(0), i).copy(p.output(at(1), i)));
//     for (int s = 2; s < 4; ++s) c = p.input(at(s), i).reduce(c.copy(p.output(at(s), i)));
//     for (int s = 0; s < 3; ++s) c = c.copy(p.output(at(s), i));
//   }
//
// Every statement records where it was written (std::source_location), so the checker (dsl/algorithm_check.hpp) can
// name the line of a wrong step. Schedule hints: `Hints{channel, step}` puts a statement on a channel (a thread block
// on the ranks it touches) at a position in that channel's order (default: program order).
//
// A program's goal is one of the planner's collectives, alltoall, or a custom collective that states its own
// post-condition (and, if it differs from "rank r input[i] holds (r, i)", its precondition):
//
//   canopy::algo::CustomGoal next{.name = "alltonext", .output = [](int r, int i) -> std::optional<Contents> {
//     if (r == 0) return std::nullopt;  // rank 0's output is free
//     return Contents{{{r - 1, i}, 1}};  // rank r's output[i] holds rank r-1's input[i], once
//   }};
//   canopy::algo::Program p("alltonext", next, n, /*chunks=*/1);
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/collective.hpp"

namespace canopy::algo {

enum class Buffer { input, output, scratch };
std::string to_string(Buffer b);

// `count` consecutive chunks of one rank's buffer, from `index`.
struct ChunkRef {
  int rank = 0;
  Buffer buffer = Buffer::input;
  int index = 0;
  int count = 1;
  friend bool operator==(const ChunkRef&, const ChunkRef&) = default;
};
std::string to_string(const ChunkRef& c);  // "rank 2 input[3..4]"

struct Hints {
  int channel = 0;
  std::optional<int> step;  // position in the channel's order; unset: after the channel's previous statements
};

enum class OpKind { copy, reduce };
struct Op {
  OpKind kind = OpKind::copy;
  ChunkRef src;  // read
  ChunkRef dst;  // written (reduce: read and written, dst = dst (op) src)
  Hints hints;
  int line = 0;  // where it was written: the C++ statement's line, or the XML element's for imported programs
};

// What a chunk holds symbolically: how many times each (rank, input index) was reduced in. Empty: nothing.
using Contents = std::map<std::pair<int, int>, int>;

// Alltoall: with C = chunks, rank r's input chunk q*C+c ends in rank q's output at r*C+c; both buffers hold ranks x C.
struct AllToAll {};

// A collective of the program's own. Buffer sizes are per rank (0: the program's `chunks`).
struct CustomGoal {
  std::string name = {};  // what Program::goal() reports, e.g. "alltonext"
  // Post-condition: what output[index] of `rank` must hold at the end; nullopt leaves that chunk free. Required.
  std::function<std::optional<Contents>(int rank, int index)> output = {};
  bool reduces = false;  // whether outputs combine inputs (a runtime then applies the reduction operator)
  int input_chunks = 0;
  int output_chunks = 0;
  // Precondition: what input[index] of `rank` holds (empty: nothing to read). Unset: {(rank, index)}.
  std::function<Contents(int rank, int index)> input = {};
};

// What a program must achieve; a Collective converts implicitly.
using Goal = std::variant<Collective, AllToAll, CustomGoal>;

class Program;

// A reference to chunks of a program's buffers; copy and reduce append statements to the program.
class Chunk {
 public:
  Chunk(Program* program, ChunkRef ref) : program_(program), ref_(ref) {}
  const ChunkRef& ref() const { return ref_; }

  // Writes these chunks to `count` chunks of `buffer` on `rank` from `index`; returns the written chunks.
  Chunk copy(int rank, Buffer buffer, int index, Hints hints = {},
             std::source_location where = std::source_location::current()) const;
  Chunk copy(const Chunk& to, Hints hints = {}, std::source_location where = std::source_location::current()) const;
  // to = to (op) this, element-wise; returns `to`.
  Chunk reduce(const Chunk& to, Hints hints = {}, std::source_location where = std::source_location::current()) const;

 private:
  Program* program_;
  ChunkRef ref_;
};

class Program {
 public:
  // `chunks`: how many chunks each rank's input holds for allreduce, broadcast and reduce; for allgather each rank's
  // input holds `chunks` and its output ranks x chunks; reduce-scatter inputs hold ranks x chunks, alltoall inputs
  // and outputs both; a custom goal's buffers hold its input_chunks and output_chunks, or `chunks` where those are 0.
  // Throws canopy::Error on ranks < 1, chunks < 1, a root outside the ranks, or a custom goal without a name, a
  // post-condition or with negative sizes.
  Program(std::string name, Goal goal, int ranks, int chunks, int root = 0);

  Chunk input(int rank, int index, int count = 1);
  Chunk output(int rank, int index, int count = 1);
  Chunk scratch(int rank, int index, int count = 1);

  const std::string& name() const { return name_; }
  const Goal& spec() const { return goal_; }
  // The goal's name: "allreduce", ..., "reducescatter", "alltoall", or a custom goal's name.
  std::string goal() const;
  // Whether the goal combines inputs (reduce, allreduce, reduce-scatter, a custom goal that says so).
  bool reduces() const;
  // The planner's collective the program implements; nullopt for alltoall and custom goals.
  std::optional<Collective> collective() const;
  int ranks() const { return ranks_; }
  int chunks() const { return chunks_; }
  int root() const { return root_; }
  // Chunks in `buffer` of a rank (scratch: as many as the program uses).
  int buffer_chunks(Buffer buffer) const;
  const std::vector<Op>& ops() const { return ops_; }
  // Whether a call may pass NCCL's in-place layout (allgather: send = recv + rank x input; reduce-scatter: recv =
  // send + rank x output; else send = recv). Only for programs whose statements read their input before anything
  // writes where it lies: imported MSCCL-IR programs declared inplace="1", whose input is copied into the working
  // area first (dsl/msccl_layout.hpp). Programs written with this DSL run out of place.
  bool runs_in_place() const { return runs_in_place_; }
  void set_runs_in_place(bool in_place) { runs_in_place_ = in_place; }

  // Used by Chunk; also lets imported programs (MSCCL XML) append statements.
  Chunk add(OpKind kind, const ChunkRef& src, const ChunkRef& dst, Hints hints, int line);

 private:
  Chunk ref(int rank, Buffer buffer, int index, int count);

  std::string name_;
  Goal goal_;
  int ranks_;
  int chunks_;
  int root_;
  int scratch_chunks_ = 0;
  bool runs_in_place_ = false;
  std::vector<Op> ops_;
};

}  // namespace canopy::algo
