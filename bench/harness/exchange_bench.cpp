// run_exchange_benchmark (see exchange_bench.hpp).
#include "bench/harness/exchange_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "bench/harness/call_timing.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

namespace {

constexpr unsigned char kPoison = 0xA5;

// This process's ranks' buffers (send, receive) and one stream per GPU, shared by the ranks on it (as
// CollectiveBuffers: the timing records events on each GPU's first rank's stream).
struct ExchangeBuffers {
  std::vector<int> devices;  // per own rank
  std::vector<const void*> send;
  std::vector<void*> recv;
  std::vector<cudaStream_t> streams;
  std::vector<cudaStream_t> own_streams;  // made here, one per GPU

  ~ExchangeBuffers() {
    CurrentDevice keep;
    for (std::size_t k = 0; k < devices.size(); ++k) {
      cudaSetDevice(devices[k]);
      if (k < send.size() && send[k]) cudaFree(const_cast<void*>(send[k]));
      if (k < recv.size() && recv[k]) cudaFree(recv[k]);
    }
    for (cudaStream_t s : own_streams) cudaStreamDestroy(s);
  }
};

Status make_buffers(const Communicator& comm, std::uint64_t send_bytes, std::uint64_t recv_bytes, ExchangeBuffers* b) {
  CurrentDevice keep;
  const int own = comm.own_ranks();
  b->send.assign(own, nullptr);
  b->recv.assign(own, nullptr);
  b->streams.assign(own, nullptr);
  std::vector<std::uint8_t> data(send_bytes);
  for (int k = 0; k < own; ++k) {
    const int rank = comm.first_own_rank() + k;
    const int device = comm.device_of_rank(rank);
    b->devices.push_back(device);
    CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(device));
    for (int j = 0; j < k && !b->streams[k]; ++j)
      if (b->devices[j] == device) b->streams[k] = b->streams[j];
    if (!b->streams[k]) {
      CANOPY_CUDA_RETURN_STATUS(cudaStreamCreateWithFlags(&b->streams[k], cudaStreamNonBlocking));
      b->own_streams.push_back(b->streams[k]);
    }
    void* send = nullptr;
    if (const cudaError_t e = cudaMalloc(&send, std::max<std::uint64_t>(send_bytes, 1)); e != cudaSuccess)
      return cuda_status(e, fmt::format("cudaMalloc of rank {}'s send buffer ({} bytes)", rank, send_bytes));
    b->send[k] = send;
    if (const cudaError_t e = cudaMalloc(&b->recv[k], std::max<std::uint64_t>(recv_bytes, 1)); e != cudaSuccess)
      return cuda_status(e, fmt::format("cudaMalloc of rank {}'s receive buffer ({} bytes)", rank, recv_bytes));
    for (std::uint64_t i = 0; i < send_bytes; ++i) data[i] = exchange_byte(rank, i);
    CANOPY_CUDA_RETURN_STATUS(cudaMemcpy(send, data.data(), send_bytes, cudaMemcpyHostToDevice));
  }
  return Status();
}

// Poisons the receive buffers, runs `ops` once through the communicator and counts this process's wrong elements (the
// first few described in `examples`).
Status check_once(Communicator& comm, const ExchangeBenchOptions& o, std::uint64_t count,
                  const std::vector<PointToPoint>& ops, ExchangeBuffers& b, std::int64_t* wrong,
                  std::vector<std::string>* examples) {
  CurrentDevice keep;
  const int n = comm.ranks();
  const std::uint64_t elements = exchange_recv_elements(o.call, count, n);
  const std::uint64_t size = static_cast<std::uint64_t>(size_of(o.dtype));
  for (std::size_t k = 0; k < b.recv.size(); ++k) {
    CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(b.devices[k]));
    CANOPY_CUDA_RETURN_STATUS(cudaMemsetAsync(b.recv[k], kPoison, elements * size, b.streams[k]));
  }
  if (Status s = comm.send_recv(ops); !s.ok()) return s;
  std::vector<std::uint8_t> got(elements * size);
  *wrong = 0;
  for (std::size_t k = 0; k < b.recv.size(); ++k) {
    const int rank = comm.first_own_rank() + static_cast<int>(k);
    CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(b.devices[k]));
    CANOPY_CUDA_RETURN_STATUS(cudaStreamSynchronize(b.streams[k]));
    CANOPY_CUDA_RETURN_STATUS(cudaMemcpy(got.data(), b.recv[k], got.size(), cudaMemcpyDeviceToHost));
    for (std::uint64_t i = 0; i < elements; ++i) {
      const std::optional<ExchangeSource> from = exchange_source(o.call, n, o.root, rank, count, i);
      if (!from) continue;
      bool right = true;
      for (std::uint64_t j = 0; j < size && right; ++j)
        right = got[i * size + j] == exchange_byte(from->rank, from->element * size + j);
      if (right) continue;
      if (++*wrong <= 3)
        examples->push_back(fmt::format("{} of {} x {}: rank {} element {} (from rank {} element {}) is wrong",
                                        to_string(o.call), count, to_string(o.dtype), rank, i, from->rank,
                                        from->element));
    }
  }
  return Status();
}

}  // namespace

Status run_exchange_benchmark(Communicator& comm, const ExchangeBenchOptions& o, NcclBaseline* nccl,
                              const std::function<void(const BenchRow&)>& on_row) {
  const int n = comm.ranks();
  if (o.root < 0 || o.root >= n)
    return Status(StatusCode::invalid_argument,
                  fmt::format("--root {}: not a rank of this communicator (0..{})", o.root, n - 1));
  std::uint64_t top = 0;
  for (std::uint64_t s : o.sizes) top = std::max(top, exchange_count(o.call, s, o.dtype, n));
  const std::uint64_t size = static_cast<std::uint64_t>(size_of(o.dtype));
  ExchangeBuffers b;
  if (Status s = make_buffers(comm, exchange_send_elements(o.call, top, n) * size,
                              exchange_recv_elements(o.call, top, n) * size, &b);
      !s.ok())
    return s;
  cudaDeviceProp prop{};
  if (const cudaError_t e = cudaGetDeviceProperties(&prop, b.devices.empty() ? 0 : b.devices[0]); e != cudaSuccess)
    return cuda_status(e, "cudaGetDeviceProperties");
  const int procs = bench_procs(comm);
  const std::string device = bench_device(comm, prop.name);
  for (std::size_t size_index = 0; size_index < o.sizes.size(); ++size_index) {
    const std::uint64_t bytes_asked = o.sizes[size_index];
    const std::uint64_t count = exchange_count(o.call, bytes_asked, o.dtype, n);
    if (count == 0) continue;
    const std::vector<PointToPoint> ops =
        exchange_ops(o.call, n, o.root, comm.first_own_rank(), b.send, b.recv, count, o.dtype, b.streams);
    BenchRow row;
    row.goal = to_string(o.call);
    row.dtype = o.dtype;
    row.bytes = exchange_bytes(o.call, count, o.dtype, n);
    row.count = count;
    row.ranks = n;
    row.procs = procs;
    row.iters = o.iters;
    row.device = device;
    if (o.check) {
      std::int64_t wrong = 0;
      std::vector<std::string> examples;
      if (Status s = check_once(comm, o, count, ops, b, &wrong, &examples); !s.ok()) return s;
      std::vector<double> total = {static_cast<double>(wrong)};
      if (Status s = across_processes(comm, b.streams, ReduceOp::sum, total); !s.ok()) return s;
      row.errors = static_cast<std::int64_t>(total[0]);
      for (const std::string& e : examples) fmt::print(stderr, "canopy bench: wrong: {}\n", e);
    }
    const std::function<Status()> theirs = [&] { return nccl->run_point_to_point(ops, comm.first_own_rank()); };
    if (Status s = time_row(comm, b.streams, RowTiming{o.warmup, o.iters, o.repeats, false, o.rounds, size_index},
                            [&] { return comm.send_recv(ops); }, nccl ? theirs : nullptr, &row);
        !s.ok())
      return s;
    const double factor = exchange_busbw_factor(o.call, n);
    row.algbw_gbps = static_cast<double>(row.bytes) / (row.time_us * 1e-6) / 1e9;
    row.busbw_gbps = row.algbw_gbps * factor;
    if (row.nccl_time_us > 0)
      row.nccl_busbw_gbps = static_cast<double>(row.bytes) / (row.nccl_time_us * 1e-6) / 1e9 * factor;
    on_row(row);
  }
  CurrentDevice keep;
  for (std::size_t k = 0; k < b.devices.size(); ++k) {
    CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(b.devices[k]));
    CANOPY_CUDA_RETURN_STATUS(cudaStreamSynchronize(b.streams[k]));
  }
  return Status();
}

}  // namespace canopy
