// How an MSCCL-IR program's buffers map onto a Canopy program (dsl/algorithm.hpp): the program's size from coll,
// ngpus and nchunksperloop (MSCCL's executor: nchunksperloop = i_chunks x ngpus for allgather, o_chunks x ngpus for
// reduce_scatter, i_chunks and o_chunks otherwise), and, for in-place programs, the aliasing MSCCL's executor and
// msccl-tools define: allreduce, alltoall, broadcast and reduce run with input = output; an in-place allgather's input
// is its own slice of the output (output[rank x C ..]); an in-place reduce_scatter's output is its own slice of the
// input (input[rank x C ..]). Canopy's inputs are read-only, so an in-place program works in a buffer that starts as a
// copy of the input (a prologue copy on each rank): the output, or for reduce_scatter a scratch area after the XML's
// own scratch, copied to the output at the end (an epilogue). Custom collectives have no defined layout: their
// buffers are read as written (msccl-tools aliases nothing for them either).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "dsl/algorithm.hpp"

namespace canopy::algo {

enum class MscclColl { allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall, custom };
std::optional<MscclColl> parse_msccl_coll(const std::string& coll);  // nullopt: not a coll MSCCL knows
// How many chunks of nchunksperloop an i_chunks (input) or o_chunks (output) of 1 stands for: ngpus for the input of
// allgather and the output of reduce_scatter, else 1.
int msccl_chunks_multiplier(MscclColl coll, Buffer buffer, int ranks);
// The letter MSCCL-IR names a buffer by: i(nput), o(utput), s(cratch).
char msccl_buffer_letter(Buffer b);

struct MscclLayout {
  MscclColl coll = MscclColl::custom;
  bool inplace = false;
  int ranks = 1;
  int chunks = 1;          // the Canopy program's chunks (per-rank slice for allgather, reduce_scatter, alltoall)
  int scratch_base = 0;    // reduce_scatter in place: where the working area starts in scratch
  // Where MSCCL's (rank, buffer, index) lives in the Canopy program.
  ChunkRef at(int rank, Buffer buffer, int index, int count) const;
  // Statements before and after the program's own, for in-place programs (none otherwise). The prologue copies each
  // input chunk on the channel `channel_of` names for the slot it lands in (the channel that first uses it), so
  // channel order keeps it before that use.
  void add_prologue(Program& p, int line, const std::function<int(const ChunkRef&)>& channel_of) const;
  void add_epilogue(Program& p, int line) const;
};

}  // namespace canopy::algo
