// CollectiveCall: one collective as a user asks for it, in NCCL's conventions (a send and a receive buffer, an
// element count, a type, an operator, a root and a stream for every rank), and check_call(), which finds the
// first argument the call cannot take and says which and why. The facts about pointers and streams come from a
// CallOracle (the CUDA runtime in the Communicator, a table in the tests), so every rule is tested on any CPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "dsl/algorithm.hpp"
#include "core/collective.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "core/status.hpp"

namespace canopy {

// count, NCCL's way: allgather = elements each rank sends (receives count x ranks); reduce-scatter = elements
// each rank receives (sends count x ranks); otherwise the elements of every buffer. root: a rank index
// (broadcast and reduce). In place: recv == send (allreduce, broadcast, reduce); send == recv + rank x count
// elements (allgather); recv == send + rank x count elements (reduce-scatter).
struct CollectiveCall {
  Collective collective = Collective::allreduce;
  std::span<const void* const> send;
  std::span<void* const> recv;
  std::uint64_t count = 0;
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  std::span<const cudaStream_t> streams;
  // Set: a collective-algorithm program runs instead (Communicator::run_program); `collective` and `root` are then
  // ignored. count elements make the program's chunks (each count / chunks elements, so count must be a multiple);
  // each rank sends input-buffer chunks and receives output-buffer chunks of that size, out of place.
  const algo::Program* program = nullptr;
  // > 0: run the planned kernel specialised for this chunk size (what `canopy tune` measures); 0: the tuned one
  // (tuning.json), else the communicator's.
  std::int64_t chunk_bytes = 0;
};

std::string call_name(Collective collective);  // "allreduce", "reduce_scatter", ... as the API spells them
std::string call_name(const CollectiveCall& call);  // the same, or "algorithm NAME" for a program

enum class MemoryKind { unregistered, host, device, managed };
struct PointerFacts {
  MemoryKind kind = MemoryKind::unregistered;
  int device = -1;                            // device and managed memory
  std::optional<AllocationRange> allocation;  // when known: the bounds check uses it
};

// What the driver says of a stream: its GPU (CUDA ordinal) and its process-unique ID (cudaStreamGetId), which the
// launch reuses to notice a change of stream without asking again.
struct StreamFacts {
  int device = -1;
  unsigned long long id = 0;
};

// The legacy or per-thread default stream (null among them): its GPU is the current device's, not the stream's own.
// Inline: check_call asks it for every rank of every call.
inline bool is_default_stream(cudaStream_t s) {
  return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

struct CallOracle {
  // Empty: pointers are not asked about (CANOPY_CHECK_POINTERS=0): no memory-kind, GPU or bounds check.
  std::function<PointerFacts(const void*)> pointer;
  std::function<std::optional<StreamFacts>(cudaStream_t)> stream;  // nullopt: not a valid stream
  // Whether work issued to the stream is being captured into a CUDA graph (empty: not asked). A call is captured
  // whole or not at all: its kernels on every GPU wait for each other.
  std::function<bool(cudaStream_t)> stream_capturing;
};

// Elements of rank r's send and receive buffers for a call of `count` (0 where the rank does not use that
// buffer: broadcast's non-root send, reduce's non-root recv).
std::uint64_t send_elements(Collective collective, std::uint64_t count, int ranks, int rank, int root);
std::uint64_t recv_elements(Collective collective, std::uint64_t count, int ranks, int rank, int root);

// nccl-tests' size S of a call, in bytes: allgather's output, reduce-scatter's input, otherwise the buffer; for a
// program, its larger buffer per rank. What message classes (large, low latency) and tuning buckets go by.
std::uint64_t size_bytes(Collective collective, std::uint64_t count, DataType dtype, int ranks);
std::uint64_t size_bytes(const algo::Program& program, std::uint64_t count, DataType dtype);
// The chunks of a program's larger buffer (input or output) per rank.
int widest_buffer_chunks(const algo::Program& program);

// Largest count the generated kernels take for this collective and rank count (their range arithmetic needs
// count x ranks < 2^47) that also keeps every byte size in 64 bits.
std::uint64_t max_count(Collective collective, DataType dtype, int ranks);
std::uint64_t max_count(const algo::Program& program, DataType dtype);  // the same for a program's call

// The first problem with `call` for ranks placed on `device_of_rank` (CUDA ordinals), or ok. Rules: one send,
// recv and stream per rank; a count the kernels can address; a known dtype and op; a root among the ranks;
// every buffer the rank uses non-null, device (or managed) memory of the rank's GPU, aligned to its element,
// inside one allocation; send and recv either disjoint or exactly in place; no two ranks writing the same
// memory; each stream on its rank's GPU, and ranks of one GPU on one stream (they run in one launch); every stream
// capturing a CUDA graph or none (a capturing stream's GPU is not asked: that would invalidate the capture).
// `capturing`, when given, is set to whether the streams capture. `stream_ids`, when given (one per rank), gets the
// ID of each stream the oracle was asked about, 0 for the others (default streams, capturing streams, and ranks
// sharing an earlier rank's stream). `own`, when given (one per rank): only the ranks marked there have their streams
// and buffers checked (a multi-process communicator's ranks of this process; the others' entries are placeholders).
Status check_call(const CollectiveCall& call, const std::vector<int>& device_of_rank, const CallOracle& oracle,
                  bool* capturing = nullptr, std::span<unsigned long long> stream_ids = {},
                  std::span<const char> own = {});

}  // namespace canopy
