// The calls that move whole blocks between ranks, NCCL's point-to-point family, as `canopy bench -c
// sendrecv|alltoall|gather|scatter` times them: each as the group of sends and receives it is (runtime/call/
// block_collectives.hpp; sendrecv a ring, as nccl-tests' sendrecv_perf), nccl-tests' size convention and bus-bandwidth
// factor, the buffers a rank needs, the test data, and where each received element comes from (the check). Pure host
// code, tested on any CPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/data_type.hpp"
#include "runtime/call/point_to_point.hpp"

namespace canopy {

enum class ExchangeCall { sendrecv, alltoall, gather, scatter };

// "sendrecv", "alltoall", "gather", "scatter" (the JSON's collective); nullopt for any other name.
std::optional<ExchangeCall> exchange_call_named(const std::string& name);
const char* to_string(ExchangeCall call);

// nccl-tests' convention for size S in bytes: sendrecv moves S from each rank to the next; alltoall's S is a rank's
// whole send buffer (ranks blocks), gather's the root's receive buffer, scatter's the root's send buffer. The elements
// a block (0 when S holds less than one a block), and the bytes a row reports (what S rounds down to).
std::uint64_t exchange_count(ExchangeCall call, std::uint64_t bytes, DataType dtype, int ranks);
std::uint64_t exchange_bytes(ExchangeCall call, std::uint64_t count, DataType dtype, int ranks);
// busbw / algbw, nccl-tests': 1 for sendrecv, (n-1)/n for the others.
double exchange_busbw_factor(ExchangeCall call, int ranks);

// The elements each rank's send and receive buffers need for `count` a block (every rank alike: the root's).
std::uint64_t exchange_send_elements(ExchangeCall call, std::uint64_t count, int ranks);
std::uint64_t exchange_recv_elements(ExchangeCall call, std::uint64_t count, int ranks);

// The group of sends and receives of ranks first .. first + send.size() - 1 (this process's), rank first + k with
// send[k], recv[k] and streams[k]: sendrecv sends to rank + 1 and receives from rank - 1 (a ring; one rank sends to
// itself); the others as runtime/call/block_collectives.hpp, out of place.
std::vector<PointToPoint> exchange_ops(ExchangeCall call, int ranks, int root, int first,
                                       const std::vector<const void*>& send, const std::vector<void*>& recv,
                                       std::uint64_t count, DataType dtype, const std::vector<cudaStream_t>& streams);

// Where element `index` of rank `rank`'s receive buffer comes from: the sending rank and the element of its send
// buffer; nullopt where the call writes nothing (gather's receive buffer off the root, past the call's elements).
struct ExchangeSource {
  int rank = 0;
  std::uint64_t element = 0;
};
std::optional<ExchangeSource> exchange_source(ExchangeCall call, int ranks, int root, int rank, std::uint64_t count,
                                              std::uint64_t index);

// The test data: byte `offset` of rank `rank`'s send buffer (a hash of both, so a block that lands in the wrong place
// or from the wrong rank differs from the one expected in most of its bytes).
std::uint8_t exchange_byte(int rank, std::uint64_t offset);

}  // namespace canopy
