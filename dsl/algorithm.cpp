// Program and Chunk (see algorithm.hpp): recording statements, with bounds checked as they are written.
#include "dsl/algorithm.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace canopy::algo {

std::string to_string(Buffer b) {
  switch (b) {
    case Buffer::input:
      return "input";
    case Buffer::output:
      return "output";
    case Buffer::scratch:
      return "scratch";
  }
  return "?";
}

std::string to_string(const ChunkRef& c) {
  return c.count == 1 ? fmt::format("rank {} {}[{}]", c.rank, to_string(c.buffer), c.index)
                      : fmt::format("rank {} {}[{}..{}]", c.rank, to_string(c.buffer), c.index, c.index + c.count - 1);
}

Program::Program(std::string name, Goal goal, int ranks, int chunks, int root)
    : name_(std::move(name)), goal_(std::move(goal)), ranks_(ranks), chunks_(chunks), root_(root) {
  if (ranks < 1) throw Error(fmt::format("algorithm '{}': {} ranks; a program needs at least 1", name_, ranks));
  if (chunks < 1) throw Error(fmt::format("algorithm '{}': {} chunks per buffer; use at least 1", name_, chunks));
  if (root < 0 || root >= ranks)
    throw Error(fmt::format("algorithm '{}': root {} is not a rank (0..{})", name_, root, ranks - 1));
  if (const auto* custom = std::get_if<CustomGoal>(&goal_)) {
    if (custom->name.empty())
      throw Error(
          fmt::format("algorithm '{}': its custom goal has no name: set CustomGoal::name (e.g. \"alltonext\")", name_));
    if (!custom->output)
      throw Error(
          fmt::format("algorithm '{}': custom goal '{}' has no post-condition: set CustomGoal::output to say "
                      "what each output chunk must hold",
                      name_, custom->name));
    if (custom->input_chunks < 0 || custom->output_chunks < 0)
      throw Error(
          fmt::format("algorithm '{}': custom goal '{}' has {} input and {} output chunks; use >= 1, or 0 for "
                      "the program's chunks",
                      name_, custom->name, custom->input_chunks, custom->output_chunks));
  }
}

std::string Program::goal() const {
  if (const auto* c = std::get_if<Collective>(&goal_)) return canopy::to_string(*c);
  if (const auto* custom = std::get_if<CustomGoal>(&goal_)) return custom->name;
  return "alltoall";
}

bool Program::reduces() const {
  if (const auto* c = std::get_if<Collective>(&goal_)) return canopy::reduces(*c);
  if (const auto* custom = std::get_if<CustomGoal>(&goal_)) return custom->reduces;
  return false;
}

std::optional<Collective> Program::collective() const {
  if (const auto* c = std::get_if<Collective>(&goal_)) return *c;
  return std::nullopt;
}

int Program::buffer_chunks(Buffer buffer) const {
  if (buffer == Buffer::scratch) return scratch_chunks_;
  const bool in = buffer == Buffer::input;
  if (const auto* custom = std::get_if<CustomGoal>(&goal_)) {
    const int n = in ? custom->input_chunks : custom->output_chunks;
    return n > 0 ? n : chunks_;
  }
  if (std::holds_alternative<AllToAll>(goal_)) return ranks_ * chunks_;
  const Collective c = std::get<Collective>(goal_);
  const bool spread = in ? c == Collective::reducescatter : c == Collective::allgather;
  return spread ? ranks_ * chunks_ : chunks_;
}

Chunk Program::ref(int rank, Buffer buffer, int index, int count) {
  if (rank < 0 || rank >= ranks_)
    throw Error(fmt::format("algorithm '{}': {}(rank {}, ...): the ranks are 0..{}", name_, to_string(buffer), rank,
                            ranks_ - 1));
  if (count < 1 || index < 0)
    throw Error(fmt::format("algorithm '{}': {}(rank {}, index {}, count {}): index must be >= 0 and count >= 1", name_,
                            to_string(buffer), rank, index, count));
  if (buffer == Buffer::scratch) {
    scratch_chunks_ = std::max(scratch_chunks_, index + count);
  } else if (index + count > buffer_chunks(buffer)) {
    throw Error(
        fmt::format("algorithm '{}': {}(rank {}, index {}, count {}) is past the end: a {} {} buffer holds "
                    "{} chunks",
                    name_, to_string(buffer), rank, index, count, goal(), to_string(buffer), buffer_chunks(buffer)));
  }
  return Chunk(this, ChunkRef{rank, buffer, index, count});
}

Chunk Program::input(int rank, int index, int count) { return ref(rank, Buffer::input, index, count); }
Chunk Program::output(int rank, int index, int count) { return ref(rank, Buffer::output, index, count); }
Chunk Program::scratch(int rank, int index, int count) { return ref(rank, Buffer::scratch, index, count); }

Chunk Program::add(OpKind kind, const ChunkRef& src, const ChunkRef& dst, Hints hints, int line) {
  if (src.count != dst.count)
    throw Error(fmt::format("algorithm '{}', line {}: {} of {} chunks into {} chunks: counts must match", name_, line,
                            kind == OpKind::copy ? "copy" : "reduce", src.count, dst.count));
  if (hints.channel < 0 || (hints.step && *hints.step < 0))
    throw Error(fmt::format("algorithm '{}', line {}: channel and step hints must be >= 0", name_, line));
  ref(src.rank, src.buffer, src.index, src.count);  // bounds (and scratch growth)
  ref(dst.rank, dst.buffer, dst.index, dst.count);
  ops_.push_back(Op{kind, src, dst, hints, line});
  return Chunk(this, dst);
}

Chunk Chunk::copy(int rank, Buffer buffer, int index, Hints hints, std::source_location where) const {
  return program_->add(OpKind::copy, ref_, ChunkRef{rank, buffer, index, ref_.count}, hints,
                       static_cast<int>(where.line()));
}

Chunk Chunk::copy(const Chunk& to, Hints hints, std::source_location where) const {
  return program_->add(OpKind::copy, ref_, to.ref_, hints, static_cast<int>(where.line()));
}

Chunk Chunk::reduce(const Chunk& to, Hints hints, std::source_location where) const {
  return program_->add(OpKind::reduce, ref_, to.ref_, hints, static_cast<int>(where.line()));
}

}  // namespace canopy::algo
