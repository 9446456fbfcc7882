// ExchangeCall's conventions, ops and check (see exchange_calls.hpp).
#include "bench/harness/exchange_calls.hpp"

#include "runtime/call/block_collectives.hpp"

namespace canopy {

std::optional<ExchangeCall> exchange_call_named(const std::string& name) {
  for (ExchangeCall c : {ExchangeCall::sendrecv, ExchangeCall::alltoall, ExchangeCall::gather, ExchangeCall::scatter})
    if (name == to_string(c)) return c;
  return std::nullopt;
}

const char* to_string(ExchangeCall call) {
  switch (call) {
    case ExchangeCall::sendrecv:
      return "sendrecv";
    case ExchangeCall::alltoall:
      return "alltoall";
    case ExchangeCall::gather:
      return "gather";
    case ExchangeCall::scatter:
      return "scatter";
  }
  return "?";
}

std::uint64_t exchange_count(ExchangeCall call, std::uint64_t bytes, DataType dtype, int ranks) {
  const std::uint64_t elements = bytes / static_cast<std::uint64_t>(size_of(dtype));
  return call == ExchangeCall::sendrecv ? elements : elements / static_cast<std::uint64_t>(ranks);
}

std::uint64_t exchange_bytes(ExchangeCall call, std::uint64_t count, DataType dtype, int ranks) {
  const std::uint64_t block = count * static_cast<std::uint64_t>(size_of(dtype));
  return call == ExchangeCall::sendrecv ? block : block * static_cast<std::uint64_t>(ranks);
}

double exchange_busbw_factor(ExchangeCall call, int ranks) {
  return call == ExchangeCall::sendrecv ? 1.0 : static_cast<double>(ranks - 1) / ranks;
}

std::uint64_t exchange_send_elements(ExchangeCall call, std::uint64_t count, int ranks) {
  return call == ExchangeCall::alltoall || call == ExchangeCall::scatter ? count * static_cast<std::uint64_t>(ranks)
                                                                         : count;
}

std::uint64_t exchange_recv_elements(ExchangeCall call, std::uint64_t count, int ranks) {
  return call == ExchangeCall::alltoall || call == ExchangeCall::gather ? count * static_cast<std::uint64_t>(ranks)
                                                                        : count;
}

std::vector<PointToPoint> exchange_ops(ExchangeCall call, int ranks, int root, int first,
                                       const std::vector<const void*>& send, const std::vector<void*>& recv,
                                       std::uint64_t count, DataType dtype, const std::vector<cudaStream_t>& streams) {
  std::vector<PointToPoint> ops;
  for (std::size_t k = 0; k < send.size(); ++k) {
    const int rank = first + static_cast<int>(k);
    if (call == ExchangeCall::sendrecv) {
      ops.push_back(send_op(rank, send[k], count, dtype, (rank + 1) % ranks, streams[k]));
      ops.push_back(recv_op(rank, recv[k], count, dtype, (rank + ranks - 1) % ranks, streams[k]));
      continue;
    }
    const BlockCall c{rank, ranks, root, send[k], recv[k], count, dtype, streams[k]};
    const std::vector<PointToPoint> mine = call == ExchangeCall::alltoall ? alltoall_ops(c)
                                           : call == ExchangeCall::gather ? gather_ops(c)
                                                                          : scatter_ops(c);
    ops.insert(ops.end(), mine.begin(), mine.end());
  }
  return ops;
}

std::optional<ExchangeSource> exchange_source(ExchangeCall call, int ranks, int root, int rank, std::uint64_t count,
                                              std::uint64_t index) {
  const std::uint64_t n = static_cast<std::uint64_t>(ranks);
  switch (call) {
    case ExchangeCall::sendrecv:
      if (index >= count) return std::nullopt;
      return ExchangeSource{(rank + ranks - 1) % ranks, index};
    case ExchangeCall::alltoall:  // block p of my receive buffer is block `rank`
                                  // of p's send buffer
      if (index >= count * n) return std::nullopt;
      return ExchangeSource{static_cast<int>(index / count), static_cast<std::uint64_t>(rank) * count + index % count};
    case ExchangeCall::gather:  // block p of the root's receive buffer is p's send
                                // buffer
      if (rank != root || index >= count * n) return std::nullopt;
      return ExchangeSource{static_cast<int>(index / count), index % count};
    case ExchangeCall::scatter:  // my receive buffer is block `rank` of the root's
                                 // send buffer
      if (index >= count) return std::nullopt;
      return ExchangeSource{root, static_cast<std::uint64_t>(rank) * count + index};
  }
  return std::nullopt;
}

std::uint8_t exchange_byte(int rank, std::uint64_t offset) {
  std::uint64_t x = offset * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(rank + 1) * 0xC2B2AE3D27D4EB4Full;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<std::uint8_t>(x);
}

}  // namespace canopy
