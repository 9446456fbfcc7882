// The buffer layouts of MSCCL-IR programs in Canopy's model (see msccl_layout.hpp).
#include "dsl/msccl_layout.hpp"

namespace canopy::algo {

char msccl_buffer_letter(Buffer b) { return b == Buffer::input ? 'i' : b == Buffer::output ? 'o' : 's'; }

std::optional<MscclColl> parse_msccl_coll(const std::string& coll) {
  if (coll == "allreduce") return MscclColl::allreduce;
  if (coll == "allgather") return MscclColl::allgather;
  if (coll == "reduce_scatter") return MscclColl::reduce_scatter;
  if (coll == "broadcast") return MscclColl::broadcast;
  if (coll == "reduce") return MscclColl::reduce;
  if (coll == "alltoall") return MscclColl::alltoall;
  if (coll == "custom") return MscclColl::custom;
  return std::nullopt;
}

int msccl_chunks_multiplier(MscclColl coll, Buffer buffer, int ranks) {
  if (coll == MscclColl::allgather && buffer == Buffer::input) return ranks;
  if (coll == MscclColl::reduce_scatter && buffer == Buffer::output) return ranks;
  return 1;
}

ChunkRef MscclLayout::at(int rank, Buffer buffer, int index, int count) const {
  if (!inplace || coll == MscclColl::custom || buffer == Buffer::scratch) return ChunkRef{rank, buffer, index, count};
  switch (coll) {
    case MscclColl::allgather:  // the input is this rank's slice of the output
      return ChunkRef{rank, Buffer::output, buffer == Buffer::input ? rank * chunks + index : index, count};
    case MscclColl::reduce_scatter:  // the output is this rank's slice of the input, both in the working area
      return ChunkRef{rank, Buffer::scratch,
                      scratch_base + (buffer == Buffer::output ? rank * chunks + index : index), count};
    default:  // allreduce, alltoall, broadcast, reduce: input = output
      return ChunkRef{rank, Buffer::output, index, count};
  }
}

void MscclLayout::add_prologue(Program& p, int line, const std::function<int(const ChunkRef&)>& channel_of) const {
  if (!inplace || coll == MscclColl::custom) return;
  const int in = p.buffer_chunks(Buffer::input);
  for (int r = 0; r < ranks; ++r)
    for (int k = 0; k < in;) {  // runs of chunks first used on one channel: one copy each
      const int chan = channel_of(at(r, Buffer::input, k, 1));
      int end = k + 1;
      while (end < in && channel_of(at(r, Buffer::input, end, 1)) == chan) ++end;
      p.add(OpKind::copy, ChunkRef{r, Buffer::input, k, end - k}, at(r, Buffer::input, k, end - k), Hints{chan, {}},
            line);
      k = end;
    }
}

void MscclLayout::add_epilogue(Program& p, int line) const {
  if (!inplace || coll != MscclColl::reduce_scatter) return;
  for (int r = 0; r < ranks; ++r)
    p.add(OpKind::copy, at(r, Buffer::output, 0, chunks), ChunkRef{r, Buffer::output, 0, chunks}, Hints{}, line);
}

}  // namespace canopy::algo
