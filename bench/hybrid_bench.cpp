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
//   engine 0->1 push / pull (chunk C)  NVLink through the copy engines instead of SM kernels: cudaMemcpyAsync
//                                      between the GPUs on the source's (push) or the destination's (pull) stream
//   engine 0->1 push, 2 streams        chunks taking turns on two of the source's streams (two copy engines)
//   engine 0->1 push + pull            chunks taking turns on the source's stream and the destination's
//   engine both ways                   both directions at once (what an allreduce's link carries)
//   SM broadcast + engine push f       the Communicator's broadcast (SM kernels) of (1 - f) N beside the copy
//                                      engines' push of f N: whether the two movers together beat either on NVLink
//   engine broadcast + staged f        the copy engines' broadcast beside the host path
//   engine reduce / allreduce (chunk C) the copy engines move each chunk, a combining kernel adds it (i32 sum,
//                                      checked): reduce = push to the root, combine; allreduce = each GPU pushes the
//                                      peer's half, combines its own half, pushes it back; pipelined over chunks;
//                                      a reduce also with its copies taking turns on two streams
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
#include "runtime/offload/combine_kernels.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/jit/disk_cache.hpp"
#include "runtime/jit/jit.hpp"
#include "tools/usage/command_line.hpp"

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

// Copy-engine collectives between GPU 0 and GPU 1, chunk by chunk: copies on one stream per GPU and direction,
// combining kernels on another, events between them (a pool, reused in order).
struct EnginePipe {
  cudaStream_t copy[kGpus]{}, back[kGpus]{}, add[kGpus]{};
  std::vector<cudaEvent_t> events[kGpus];
  std::size_t next[kGpus]{};
  const canopy::CombineKernels* combine[kGpus]{};

  EnginePipe() {
    for (int d = 0; d < kGpus; ++d) {
      CHECK(cudaSetDevice(d));
      CHECK(cudaStreamCreateWithFlags(&copy[d], cudaStreamNonBlocking));
      CHECK(cudaStreamCreateWithFlags(&back[d], cudaStreamNonBlocking));
      CHECK(cudaStreamCreateWithFlags(&add[d], cudaStreamNonBlocking));
      events[d].resize(4096);
      for (cudaEvent_t& e : events[d]) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
  }
  ~EnginePipe() {
    for (int d = 0; d < kGpus; ++d) {
      for (cudaEvent_t e : events[d]) cudaEventDestroy(e);
      cudaStreamDestroy(copy[d]);
      cudaStreamDestroy(back[d]);
      cudaStreamDestroy(add[d]);
    }
  }
  EnginePipe(const EnginePipe&) = delete;
  EnginePipe& operator=(const EnginePipe&) = delete;

  cudaEvent_t mark(int d, cudaStream_t s) {
    CHECK(cudaSetDevice(d));
    cudaEvent_t e = events[d][next[d]++ % events[d].size()];
    CHECK(cudaEventRecord(e, s));
    return e;
  }
  void wait(int d, cudaStream_t s, cudaEvent_t e) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaStreamWaitEvent(s, e));
  }
  void move(int d, cudaStream_t s, void* dst, const void* src, std::size_t n) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s));
  }
  void add_i32(int d, int* out, const int* a, const int* b, std::size_t n) {
    CHECK(cudaSetDevice(d));
    const void* sources[] = {a, b};
    const canopy::Status s = combine[d]->run(out, sources, n / 4, canopy::DataType::i32, canopy::ReduceOp::sum, add[d]);
    if (!s.ok()) {
      fmt::print(stderr, "combine: {}\n", s.message());
      std::exit(1);
    }
  }

  // One way, chunk by chunk, on the source's stream (push) or the destination's (pull).
  void copy_peer(int from, int to, bool pull, const char* src, char* dst, std::size_t bytes, std::size_t chunk) {
    const int d = pull ? to : from;
    for (std::size_t off = 0; off < bytes; off += chunk)
      move(d, copy[d], dst + off, src + off, std::min(chunk, bytes - off));
  }
  // One way, pushed, chunks taking turns on two of the source's streams (two copy engines at once), or, with
  // `both_ends`, on the source's stream and the destination's (pushed and pulled).
  void copy_peer_two(int from, int to, bool both_ends, const char* src, char* dst, std::size_t bytes,
                     std::size_t chunk) {
    std::size_t k = 0;
    for (std::size_t off = 0; off < bytes; off += chunk, ++k) {
      const int d = both_ends && k % 2 == 1 ? to : from;
      move(d, k % 2 == 0 || both_ends ? copy[d] : back[d], dst + off, src + off, std::min(chunk, bytes - off));
    }
  }
  // Reduce to GPU 0: GPU 1 pushes each chunk into GPU 0's recv (on one stream, or chunks taking turns on two), GPU 0
  // adds its send to it there.
  void reduce(char* const* send, char* const* recv, std::size_t bytes, std::size_t chunk, bool two = false) {
    std::size_t k = 0;
    for (std::size_t off = 0; off < bytes; off += chunk, ++k) {
      const std::size_t n = std::min(chunk, bytes - off);
      cudaStream_t s = two && k % 2 == 1 ? back[1] : copy[1];
      move(1, s, recv[0] + off, send[1] + off, n);
      wait(0, add[0], mark(1, s));
      add_i32(0, reinterpret_cast<int*>(recv[0] + off), reinterpret_cast<const int*>(send[0] + off),
              reinterpret_cast<const int*>(recv[0] + off), n);
    }
  }
  // Allreduce: GPU d reduces half d of each chunk. Each pushes the peer's half of its send into the peer's recv,
  // the peer adds its own send to it there, then pushes the sum into this GPU's recv.
  void allreduce(char* const* send, char* const* recv, std::size_t bytes, std::size_t chunk) {
    for (std::size_t off = 0; off < bytes; off += chunk) {
      const std::size_t n = std::min(chunk, bytes - off);
      const std::size_t half = n / 2 / 16 * 16;
      for (int d = 0; d < kGpus; ++d) {
        const int p = 1 - d;
        const std::size_t at = off + (p == 0 ? 0 : half), len = p == 0 ? half : n - half;  // the peer's half
        move(d, copy[d], recv[p] + at, send[d] + at, len);
      }
      cudaEvent_t pushed[kGpus] = {mark(0, copy[0]), mark(1, copy[1])};
      for (int d = 0; d < kGpus; ++d) {
        const std::size_t at = off + (d == 0 ? 0 : half), len = d == 0 ? half : n - half;  // its own half
        wait(d, add[d], pushed[1 - d]);
        add_i32(d, reinterpret_cast<int*>(recv[d] + at), reinterpret_cast<const int*>(send[d] + at),
                reinterpret_cast<const int*>(recv[d] + at), len);
        wait(d, back[d], mark(d, add[d]));
        move(d, back[d], recv[1 - d] + at, recv[d] + at, len);
      }
    }
  }
  void join() {
    for (int d = 0; d < kGpus; ++d)
      for (cudaStream_t s : {copy[d], back[d], add[d]}) {
        CHECK(cudaSetDevice(d));
        CHECK(cudaStreamSynchronize(s));
      }
  }
};

// Bytes of `p` on the GPU that are not `want`.
std::size_t wrong_bytes(const char* p, std::size_t n, unsigned char want) {
  std::vector<unsigned char> got(n);
  CHECK(cudaMemcpy(got.data(), p, n, cudaMemcpyDefault));
  return static_cast<std::size_t>(std::count_if(got.begin(), got.end(), [&](unsigned char c) { return c != want; }));
}

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
  std::vector<std::size_t> mib = {16, 256, 1024};
  CLI::App app{
      "Whether a second path between two GPUs, through pinned host memory over PCIe (Blink's hybrid transfers),\n"
      "adds to what NVLink carries, and what NVLink through the copy engines gives. Between GPU 0 and GPU 1: copies\n"
      "through pinned memory, a staged GPU-to-GPU ring, the Communicator's broadcast and allreduce alone and beside\n"
      "a staged share, copy-engine pushes and pulls, copy-engine reduces and allreduces; per size, the time per call\n"
      "(median of repeats) and the rate of each. Needs two GPUs; with fewer it says so and exits 0.\n"};
  app.name("canopy-bench-hybrid");
  app.add_option("MiB", mib, "sizes per call in MiB (default 16 256 1024)")->check(canopy::cli::whole_number(1, 65536));
  app.footer(
      "Examples:\n"
      "  canopy-bench-hybrid            16, 256 and 1024 MiB\n"
      "  canopy-bench-hybrid 64 512\n"
      "bench/device-run's step hybrid runs it (CANOPY_HYBRID_MIB: the sizes; docs/development.md).");
  if (const auto status = canopy::cli::parse_command_line(app, argc, argv)) return *status;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < kGpus) {
    fmt::print("canopy-bench-hybrid: needs two GPUs, found {}; nothing measured\n", count);
    return 0;
  }
  std::vector<std::size_t> sizes;
  for (const std::size_t m : mib) sizes.push_back(m << 20);
  const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());

  canopy::CommunicatorOptions o;
  o.devices = {0, 1};
  o.hybrid_bytes = 0;  // the Communicator's own host path off: its calls measure NVLink alone
  o.engine_bytes = 0;  // and its copy engines off: its calls are the SM kernels' (the engines are measured below)
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
  // NVLink through the copy engines.
  {
    for (int d = 0; d < kGpus; ++d) {
      CHECK(cudaSetDevice(d));
      const cudaError_t e = cudaDeviceEnablePeerAccess(1 - d, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CHECK(e);
      (void)cudaGetLastError();
    }
    canopy::Jit jit(canopy::DiskCache::from_environment());
    std::vector<std::unique_ptr<canopy::CombineKernels>> combine;
    EnginePipe pipe;
    for (int d = 0; d < kGpus; ++d) {
      cudaDeviceProp p{};
      CHECK(cudaGetDeviceProperties(&p, d));
      CHECK(cudaSetDevice(d));
      combine.push_back(std::make_unique<canopy::CombineKernels>(jit, fmt::format("sm_{}{}", p.major, p.minor)));
      pipe.combine[d] = combine.back().get();
    }
    const auto run = [&](const std::function<void()>& enqueue) {
      return timed(repeats, [&] {
        enqueue();
        pipe.join();
      });
    };
    // Checks: i32 sums of the bytes 0x11 and 0x22 in every byte lane make 0x33 (no carries).
    {
      const std::size_t n = std::min<std::size_t>(largest, 64ull << 20);
      for (int d = 0; d < kGpus; ++d) {
        CHECK(cudaSetDevice(d));
        CHECK(cudaMemset(recv[d], 0, n));
      }
      sync_all();
      pipe.reduce(send, recv, n, 4 << 20);
      pipe.join();
      fmt::print("engine reduce check: {} of {} bytes wrong\n", wrong_bytes(recv[0], n, 0x33), n);
      for (int d = 0; d < kGpus; ++d) {
        CHECK(cudaSetDevice(d));
        CHECK(cudaMemset(recv[d], 0, n));
      }
      sync_all();
      pipe.allreduce(send, recv, n - 4096 * 3, 4 << 20);
      pipe.join();
      fmt::print("engine allreduce check: {} + {} of {} bytes wrong\n", wrong_bytes(recv[0], n - 4096 * 3, 0x33),
                 wrong_bytes(recv[1], n - 4096 * 3, 0x33), n - 4096 * 3);
    }
    for (std::size_t bytes : sizes) {
      fmt::print("-- {} MiB, copy engines\n", bytes >> 20);
      const double sm = timed(
          repeats, [&] { must(comm->broadcast(sends, at(recv, 0), bytes / 4, canopy::DataType::f32, 0, streams)); });
      report("canopy broadcast (SM kernels)", bytes, sm);
      for (std::size_t chunk : {std::size_t{4} << 20, std::size_t{16} << 20, std::size_t{64} << 20}) {
        if (chunk > bytes) continue;
        report(fmt::format("engine 0->1 push (chunk {} MiB)", chunk >> 20), bytes,
               run([&] { pipe.copy_peer(0, 1, false, send[0], recv[1], bytes, chunk); }), sm);
        report(fmt::format("engine 0->1 pull (chunk {} MiB)", chunk >> 20), bytes,
               run([&] { pipe.copy_peer(0, 1, true, send[0], recv[1], bytes, chunk); }), sm);
        report(fmt::format("engine 0->1 push, 2 streams (chunk {} MiB)", chunk >> 20), bytes,
               run([&] { pipe.copy_peer_two(0, 1, false, send[0], recv[1], bytes, chunk); }), sm);
        report(fmt::format("engine 0->1 push + pull (chunk {} MiB)", chunk >> 20), bytes,
               run([&] { pipe.copy_peer_two(0, 1, true, send[0], recv[1], bytes, chunk); }), sm);
        report(fmt::format("engine both ways, each (chunk {} MiB)", chunk >> 20), bytes, run([&] {
                 pipe.copy_peer(0, 1, false, send[0], recv[1], bytes, chunk);
                 pipe.copy_peer(1, 0, false, send[1], recv[0], bytes, chunk);
               }));
      }
      // Both NVLink movers at once: the SM kernels broadcast the head while the copy engines push the tail to GPU 1
      // (and copy it into GPU 0's own receive buffer, as an out-of-place broadcast must).
      for (double f : {0.3, 0.4, 0.5, 0.6}) {
        const std::size_t eng = static_cast<std::size_t>(f * static_cast<double>(bytes)) / 4096 * 4096;
        const std::size_t nv = bytes - eng;
        report(fmt::format("SM broadcast + engine push f={:.1f}", f), bytes, run([&] {
                 must(comm->broadcast(sends, at(recv, 0), nv / 4, canopy::DataType::f32, 0, streams));
                 pipe.copy_peer(0, 1, false, send[0] + nv, recv[1] + nv, eng, eng);
                 pipe.move(0, pipe.back[0], recv[0] + nv, send[0] + nv, eng);
               }),
               sm);
      }
      for (double f : {0.08, 0.10, 0.12}) {
        const std::size_t staged = static_cast<std::size_t>(f * static_cast<double>(bytes)) / 4096 * 4096;
        const std::size_t nv = bytes - staged;
        report(fmt::format("engine broadcast + staged f={:.2f}", f), bytes, run([&] {
                 pipe.copy_peer(0, 1, false, send[0], recv[1], nv, 16 << 20);
                 there.copy(send[0] + nv, recv[1] + nv, staged);
               }),
               sm);
      }
      const double smr = timed(repeats, [&] {
        must(comm->reduce(sends, at(recv, 0), bytes / 4, canopy::DataType::i32, canopy::ReduceOp::sum, 0, streams));
      });
      report("canopy reduce (SM kernels)", bytes, smr);
      for (std::size_t chunk : {std::size_t{4} << 20, std::size_t{16} << 20, std::size_t{64} << 20})
        if (chunk <= bytes) {
          report(fmt::format("engine reduce (chunk {} MiB)", chunk >> 20), bytes,
                 run([&] { pipe.reduce(send, recv, bytes, chunk); }), smr);
          report(fmt::format("engine reduce, 2 streams (chunk {} MiB)", chunk >> 20), bytes,
                 run([&] { pipe.reduce(send, recv, bytes, chunk, true); }), smr);
        }
      const double sma = timed(repeats, [&] {
        must(comm->allreduce(sends, at(recv, 0), bytes / 4, canopy::DataType::i32, canopy::ReduceOp::sum, streams));
      });
      report("canopy allreduce (SM kernels, busbw)", bytes, sma);
      for (std::size_t chunk :
           {std::size_t{4} << 20, std::size_t{16} << 20, std::size_t{32} << 20, std::size_t{64} << 20})
        if (chunk <= bytes)
          report(fmt::format("engine allreduce (chunk {} MiB, busbw)", chunk >> 20), bytes,
                 run([&] { pipe.allreduce(send, recv, bytes, chunk); }), sma);
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
