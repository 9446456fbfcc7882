// bench/hybrid: whether a second path between two GPUs, through pinned host memory over PCIe (Blink's hybrid
// transfers), adds to what NVLink carries. Everything runs between GPU 0 and GPU 1 and prints the time per call
// (median of repeats, the host's clock around enqueue and synchronise) and the rate:
//   pcie d2h / h2d / all four          copy engines between one GPU and pinned memory, then every direction at once
//   staged 0->1 (chunk C)              GPU 0 -> pinned ring (4 slots of C) -> GPU 1, copy engines, events between
//   staged both ways                   the same in both directions at once (what an allreduce would move)
//   canopy broadcast / allreduce N     the Communicator alone, its own host path off (NVLink)
//   hybrid broadcast f                 the Communicator's broadcast of (1 - f) N beside the staged copy of f N
//   hybrid allreduce traffic f         the Communicator's allreduce of (1 - f) N beside staged copies of f N both ways
//                                      (the traffic of an allreduce whose f share crosses PCIe; its reduction, a
//                                      pass over HBM, is left out)
// The staged bytes are checked once against the source. Usage: canopy-bench-hybrid [MiB ...] (default 16 256 1024).
// Needs two GPUs; with fewer it says so and exits 0.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "bench/bench_check.hpp"
#include "runtime/communicator.hpp"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kGpus = 2;
constexpr int kSlots = 4;

// A pipelined copy from one GPU to another through a ring of pinned slots: the source's copy engine fills a
// slot, the destination's drains it; events order a slot's refill after its drain.
struct StagedPath {
  int from = 0, to = 1;
  cudaStream_t out = nullptr, in = nullptr;  // on `from`, on `to`
  char* ring = nullptr;
  std::size_t slot_bytes = 0;
  std::vector<cudaEvent_t> filled, drained;  // recorded on `out`, on `in`

  StagedPath(int from_gpu, int to_gpu, std::size_t slot) : from(from_gpu), to(to_gpu), slot_bytes(slot) {
    CHECK(cudaHostAlloc(reinterpret_cast<void**>(&ring), kSlots * slot, cudaHostAllocPortable));
    filled.resize(kSlots);
    drained.resize(kSlots);
    CHECK(cudaSetDevice(from));
    CHECK(cudaStreamCreateWithFlags(&out, cudaStreamNonBlocking));
    for (cudaEvent_t& e : filled) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    CHECK(cudaSetDevice(to));
    CHECK(cudaStreamCreateWithFlags(&in, cudaStreamNonBlocking));
    for (cudaEvent_t& e : drained) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  ~StagedPath() {
    for (cudaEvent_t e : filled) cudaEventDestroy(e);
    for (cudaEvent_t e : drained) cudaEventDestroy(e);
    cudaStreamDestroy(out);
    cudaStreamDestroy(in);
    cudaFreeHost(ring);
  }
  StagedPath(const StagedPath&) = delete;
  StagedPath& operator=(const StagedPath&) = delete;

  void copy(const char* src, char* dst, std::size_t bytes) {
    for (std::size_t off = 0, i = 0; off < bytes; off += slot_bytes, ++i) {
      const std::size_t n = std::min(slot_bytes, bytes - off);
      const std::size_t s = i % kSlots;
      char* slot = ring + s * slot_bytes;
      CHECK(cudaSetDevice(from));
      if (i >= kSlots) CHECK(cudaStreamWaitEvent(out, drained[s]));
      CHECK(cudaMemcpyAsync(slot, src + off, n, cudaMemcpyDeviceToHost, out));
      CHECK(cudaEventRecord(filled[s], out));
      CHECK(cudaSetDevice(to));
      CHECK(cudaStreamWaitEvent(in, filled[s]));
      CHECK(cudaMemcpyAsync(dst + off, slot, n, cudaMemcpyHostToDevice, in));
      CHECK(cudaEventRecord(drained[s], in));
    }
  }
};

void sync_all() {
  for (int d = 0; d < kGpus; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaDeviceSynchronize());
  }
}

// Median seconds of `repeats` runs of `enqueue` (after one warm-up), each timed from a quiet machine to a quiet one.
double timed(int repeats, const std::function<void()>& enqueue) {
  sync_all();
  enqueue();
  sync_all();
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    enqueue();
    sync_all();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void report(const std::string& what, std::size_t bytes, double seconds, double base = 0) {
  fmt::print("{:<44} {:>9.1f} us {:>8.1f} GB/s", what, seconds * 1e6, static_cast<double>(bytes) / seconds / 1e9);
  if (base > 0) fmt::print("   x{:.3f} vs NVLink alone", base / seconds);
  fmt::print("\n");
}

void must(const canopy::Status& s) {
  if (!s.ok()) {
    fmt::print(stderr, "canopy: {}\n", s.message());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < kGpus) {
    fmt::print("canopy-bench-hybrid: needs two GPUs, found {}; nothing measured\n", count);
    return 0;
  }
  std::vector<std::size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10) << 20);
  if (sizes.empty()) sizes = {16ull << 20, 256ull << 20, 1024ull << 20};
  const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());

  canopy::CommunicatorOptions o;
  o.devices = {0, 1};
  o.hybrid_bytes = 0;  // the Communicator's own host path off: its calls measure NVLink alone
  std::unique_ptr<canopy::Communicator> comm;
  must(canopy::Communicator::create(o, &comm));

  // Per GPU: send and receive buffers of the largest size, and a stream for the Communicator.
  char* send[kGpus];
  char* recv[kGpus];
  cudaStream_t stream[kGpus];
  for (int d = 0; d < kGpus; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaMalloc(reinterpret_cast<void**>(&send[d]), largest));
    CHECK(cudaMalloc(reinterpret_cast<void**>(&recv[d]), largest));
    CHECK(cudaMemset(send[d], 0x11 * (d + 1), largest));
    CHECK(cudaMemset(recv[d], 0, largest));
    CHECK(cudaStreamCreateWithFlags(&stream[d], cudaStreamNonBlocking));
  }
  const std::vector<const void*> sends = {send[0], send[1]};
  const auto at = [&](char* const* base, std::size_t off) { return std::vector<void*>{base[0] + off, base[1] + off}; };
  const auto sends_at = [&](std::size_t off) { return std::vector<const void*>{send[0] + off, send[1] + off}; };
  const std::vector<cudaStream_t> streams = {stream[0], stream[1]};
  const int repeats = 7;

  // Raw PCIe rates: each GPU's copy engines to and from pinned memory, alone and all four directions at once.
  {
    const std::size_t n = std::min<std::size_t>(largest, 256ull << 20);
    char* host[kGpus];
    cudaStream_t up[kGpus], down[kGpus];
    for (int d = 0; d < kGpus; ++d) {
      CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host[d]), 2 * n, cudaHostAllocPortable));
      CHECK(cudaSetDevice(d));
      CHECK(cudaStreamCreateWithFlags(&up[d], cudaStreamNonBlocking));
      CHECK(cudaStreamCreateWithFlags(&down[d], cudaStreamNonBlocking));
    }
    const auto d2h = [&](int d) {
      CHECK(cudaSetDevice(d));
      CHECK(cudaMemcpyAsync(host[d], send[d], n, cudaMemcpyDeviceToHost, up[d]));
    };
    const auto h2d = [&](int d) {
      CHECK(cudaSetDevice(d));
      CHECK(cudaMemcpyAsync(recv[d], host[d] + n, n, cudaMemcpyHostToDevice, down[d]));
    };
    report("pcie d2h gpu0", n, timed(repeats, [&] { d2h(0); }));
    report("pcie h2d gpu1", n, timed(repeats, [&] { h2d(1); }));
    report("pcie d2h + h2d on both GPUs (all four)", 4 * n, timed(repeats, [&] {
             for (int d = 0; d < kGpus; ++d) {
               d2h(d);
               h2d(d);
             }
           }));
    for (int d = 0; d < kGpus; ++d) {
      CHECK(cudaSetDevice(d));
      CHECK(cudaStreamDestroy(up[d]));
      CHECK(cudaStreamDestroy(down[d]));
      CHECK(cudaFreeHost(host[d]));
    }
  }

  for (std::size_t chunk : {std::size_t{1} << 20, std::size_t{4} << 20, std::size_t{16} << 20}) {
    StagedPath there(0, 1, chunk), back(1, 0, chunk);
    const std::size_t n = std::min<std::size_t>(largest, 256ull << 20);
    if (chunk == (std::size_t{1} << 20)) {
      // Check once: the staged copy delivers the source's bytes.
      CHECK(cudaSetDevice(1));
      CHECK(cudaMemset(recv[1], 0, n));
      sync_all();
      there.copy(send[0], recv[1], n);
      sync_all();
      std::vector<char> got(n);
      CHECK(cudaMemcpy(got.data(), recv[1], n, cudaMemcpyDeviceToHost));
      const auto wrong = std::count_if(got.begin(), got.end(), [](char c) { return c != 0x11; });
      fmt::print("staged copy check: {} of {} bytes wrong\n", wrong, n);
      if (wrong != 0) return 1;
    }
    report(fmt::format("staged 0->1 (chunk {} MiB)", chunk >> 20), n,
           timed(repeats, [&] { there.copy(send[0], recv[1], n); }));
    report(fmt::format("staged both ways (chunk {} MiB)", chunk >> 20), 2 * n, timed(repeats, [&] {
             there.copy(send[0], recv[1], n);
             back.copy(send[1], recv[0], n);
           }));
  }

  const std::size_t chunk = 4 << 20;
  StagedPath there(0, 1, chunk), back(1, 0, chunk);
  for (std::size_t bytes : sizes) {
    const std::uint64_t floats = bytes / 4;
    fmt::print("-- {} MiB\n", bytes >> 20);
    const double bcast = timed(repeats, [&] {
      must(comm->broadcast(sends, at(recv, 0), floats, canopy::DataType::f32, 0, streams));
    });
    report("canopy broadcast", bytes, bcast);
    for (double f : {0.04, 0.08, 0.12, 0.16}) {
      // Split on a 4 KiB boundary: the NVLink share first, then the staged share.
      const std::size_t staged = static_cast<std::size_t>(f * static_cast<double>(bytes)) / 4096 * 4096;
      const std::size_t nv = bytes - staged;
      report(fmt::format("hybrid broadcast f={:.2f}", f), bytes, timed(repeats, [&] {
               must(comm->broadcast(sends, at(recv, 0), nv / 4, canopy::DataType::f32, 0, streams));
               there.copy(send[0] + nv, recv[1] + nv, staged);
             }),
             bcast);
    }
    const double allreduce = timed(repeats, [&] {
      must(comm->allreduce(sends, at(recv, 0), floats, canopy::DataType::f32, canopy::ReduceOp::sum, streams));
    });
    report("canopy allreduce (busbw)", bytes, allreduce);
    for (double f : {0.04, 0.08, 0.12, 0.16}) {
      const std::size_t staged = static_cast<std::size_t>(f * static_cast<double>(bytes)) / 4096 * 4096;
      const std::size_t nv = bytes - staged;
      report(fmt::format("hybrid allreduce traffic f={:.2f}", f), bytes, timed(repeats, [&] {
               must(comm->allreduce(sends_at(0), at(recv, 0), nv / 4, canopy::DataType::f32, canopy::ReduceOp::sum,
                                    streams));
               there.copy(send[0] + nv, recv[1] + nv, staged);
               back.copy(send[1] + nv, recv[0] + nv, staged);
             }),
             allreduce);
    }
  }
  comm.reset();
  for (int d = 0; d < kGpus; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaStreamDestroy(stream[d]));
    CHECK(cudaFree(send[d]));
    CHECK(cudaFree(recv[d]));
  }
  return 0;
}
