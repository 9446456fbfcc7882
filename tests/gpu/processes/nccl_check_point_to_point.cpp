// canopy_nccl_check --init-all K: one process holds K ranks on GPU 0 (ncclCommInitAll with devlist {0, .., 0}: virtual
// ranks, no real NCCL beside them) and checks the calls made of sends and receives, served by Canopy: for each of
// {f32, bf16, f16, i64, u8} and each count (--counts, default 0, 1, 7, 1028, 65540), one group over every rank holding
// an ncclAllReduce (1028 floats) and then one pattern, in turn: a ring of ncclSend/ncclRecv, ncclAlltoAll, ncclGather
// to the last rank, ncclScatter from rank 0; then pairs of ranks exchanging through lone ncclSend/ncclRecv, one thread
// a rank (each pair's lower rank sends first, the other receives first, as NCCL needs). Every received element is
// compared with what its sender held, the 64 bytes past each receive must stay untouched, and every allreduce
// element is checked. Prints "nccl p2p K ranks: N elements checked, W wrong".
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/gpu/processes/nccl_check.hpp"

namespace canopy::nccl_check {

namespace {

constexpr std::size_t kGuard = 64;
constexpr unsigned char kUnwritten = 0xEE;
constexpr std::size_t kAllreduceCount = 1028;

struct Type {
  ncclDataType_t nccl;
  std::size_t size;
  const char* name;
};
constexpr Type kTypes[] = {{ncclFloat32, 4, "f32"},
                           {ncclBfloat16, 2, "bf16"},
                           {ncclFloat16, 2, "f16"},
                           {ncclInt64, 8, "i64"},
                           {ncclUint8, 1, "u8"}};

enum class Pattern { ring, alltoall, gather, scatter, lone_pairs };
constexpr Pattern kPatterns[] = {Pattern::ring, Pattern::alltoall, Pattern::gather, Pattern::scatter,
                                 Pattern::lone_pairs};
const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::ring:
      return "send/recv ring";
    case Pattern::alltoall:
      return "alltoall";
    case Pattern::gather:
      return "gather";
    case Pattern::scatter:
      return "scatter";
    case Pattern::lone_pairs:
      return "lone send/recv pairs";
  }
  return "?";
}

// Byte k of element j of the block that rank `from` sends to rank `to`: differs by sender, receiver, element and byte.
unsigned char byte_of(int from, int to, std::size_t j, std::size_t k) {
  return static_cast<unsigned char>((from * 37 + to * 11 + j * 3 + k * 101 + 1) & 0xFF);
}

// One rank's buffers on the GPU: `blocks` blocks of `count` elements to send, `blocks` to receive (and the guard).
struct RankBuffers {
  char* send = nullptr;
  char* recv = nullptr;
  float* ar_send = nullptr;
  float* ar_recv = nullptr;
};

struct Run {
  int n = 0;
  std::vector<ncclComm_t> comms;
  cudaStream_t stream = nullptr;
  std::vector<RankBuffers> buffers;
  std::size_t bytes = 0;  // of each send and receive buffer (without the guard)
  std::uint64_t checked = 0, wrong = 0;
};

// The sender of block b that rank r receives, and into which block of its receive buffer, for `p` (-1: none).
int sender_of(Pattern p, int r, int b, int n) {
  switch (p) {
    case Pattern::ring:
      return b == 0 ? (r + n - 1) % n : -1;
    case Pattern::alltoall:
      return b;
    case Pattern::gather:
      return r == n - 1 ? b : -1;
    case Pattern::scatter:
      return b == 0 ? 0 : -1;
    case Pattern::lone_pairs:
      return b == 0 && (r ^ 1) < n ? r ^ 1 : -1;
  }
  return -1;
}
// Which block of rank r's send buffer goes to rank `to`: block `to` for alltoall and scatter; else block 0, for the
// one rank it sends to (-1 for the others).
int send_block(Pattern p, int r, int to, int n) {
  switch (p) {
    case Pattern::alltoall:
    case Pattern::scatter:
      return to;
    case Pattern::ring:
      return to == (r + 1) % n ? 0 : -1;
    case Pattern::gather:
      return to == n - 1 ? 0 : -1;
    case Pattern::lone_pairs:
      return to == (r ^ 1) ? 0 : -1;
  }
  return -1;
}

bool fill(Run& run, Pattern p, const Type& t, std::size_t count) {
  const std::size_t block = count * t.size;
  for (int r = 0; r < run.n; ++r) {
    std::vector<unsigned char> send(run.bytes, 0);
    for (int to = 0; to < run.n; ++to) {
      const int b = send_block(p, r, to, run.n);
      if (b < 0) continue;
      for (std::size_t j = 0; j < count; ++j)
        for (std::size_t k = 0; k < t.size; ++k) send[b * block + j * t.size + k] = byte_of(r, to, j, k);
    }
    if (!cuda_ok(cudaMemcpy(run.buffers[r].send, send.data(), run.bytes, cudaMemcpyHostToDevice), "fill send") ||
        !cuda_ok(cudaMemset(run.buffers[r].recv, kUnwritten, run.bytes + kGuard), "poison recv"))
      return false;
    std::vector<float> ar(kAllreduceCount);
    for (std::size_t j = 0; j < kAllreduceCount; ++j)
      ar[j] = static_cast<float>((r + 1) * static_cast<int>(j % 13 + 1));
    if (!cuda_ok(cudaMemcpy(run.buffers[r].ar_send, ar.data(), ar.size() * 4, cudaMemcpyHostToDevice), "fill ar") ||
        !cuda_ok(cudaMemset(run.buffers[r].ar_recv, 0xFF, ar.size() * 4), "poison ar"))  // NaN: never a right sum
      return false;
  }
  return true;
}

ncclResult_t issue(const Run& run, Pattern p, const Type& t, std::size_t count, int r) {
  const RankBuffers& b = run.buffers[r];
  const int n = run.n;
  switch (p) {
    case Pattern::ring: {
      const ncclResult_t s = ncclSend(b.send, count, t.nccl, (r + 1) % n, run.comms[r], run.stream);
      return s != ncclSuccess ? s : ncclRecv(b.recv, count, t.nccl, (r + n - 1) % n, run.comms[r], run.stream);
    }
    case Pattern::alltoall:
      return ncclAlltoAll(b.send, b.recv, count, t.nccl, run.comms[r], run.stream);
    case Pattern::gather:
      return ncclGather(b.send, b.recv, count, t.nccl, n - 1, run.comms[r], run.stream);
    case Pattern::scatter:
      return ncclScatter(b.send, b.recv, count, t.nccl, 0, run.comms[r], run.stream);
    case Pattern::lone_pairs: {
      const int peer = r ^ 1;
      if (peer >= n) return ncclSuccess;
      if (r < peer) {
        const ncclResult_t s = ncclSend(b.send, count, t.nccl, peer, run.comms[r], run.stream);
        return s != ncclSuccess ? s : ncclRecv(b.recv, count, t.nccl, peer, run.comms[r], run.stream);
      }
      const ncclResult_t s = ncclRecv(b.recv, count, t.nccl, peer, run.comms[r], run.stream);
      return s != ncclSuccess ? s : ncclSend(b.send, count, t.nccl, peer, run.comms[r], run.stream);
    }
  }
  return ncclInternalError;
}

// Issues one case: a group over every rank (an allreduce, then the pattern), or the lone pairs from a thread a rank.
bool issue_case(Run& run, Pattern p, const Type& t, std::size_t count, const std::string& what) {
  if (p == Pattern::lone_pairs) {
    std::vector<ncclResult_t> results(run.n, ncclInternalError);
    std::vector<std::thread> threads;
    for (int r = 0; r < run.n; ++r)
      threads.emplace_back([&, r] {
        (void)cudaSetDevice(0);
        results[r] = issue(run, p, t, count, r);
      });
    for (std::thread& th : threads) th.join();
    for (int r = 0; r < run.n; ++r)
      if (!ok(results[r], what.c_str(), run.comms[r])) return false;
    return true;
  }
  if (!ok(ncclGroupStart(), "ncclGroupStart", nullptr)) return false;
  for (int r = 0; r < run.n; ++r)
    if (!ok(ncclAllReduce(run.buffers[r].ar_send, run.buffers[r].ar_recv, kAllreduceCount, ncclFloat32, ncclSum,
                          run.comms[r], run.stream),
            "ncclAllReduce", run.comms[r]) ||
        !ok(issue(run, p, t, count, r), what.c_str(), run.comms[r]))
      return false;
  return ok(ncclGroupEnd(), what.c_str(), run.comms[0]);
}

void check(Run& run, Pattern p, const Type& t, std::size_t count, const std::string& what) {
  const std::size_t block = count * t.size;
  for (int r = 0; r < run.n; ++r) {
    std::vector<unsigned char> got(run.bytes + kGuard);
    if (!cuda_ok(cudaMemcpy(got.data(), run.buffers[r].recv, got.size(), cudaMemcpyDeviceToHost), "read recv")) {
      ++run.wrong;
      continue;
    }
    std::size_t filled = 0;  // bytes a right result writes from the start: the rest stays unwritten
    for (int b = 0; b < run.n; ++b) {
      const int from = sender_of(p, r, b, run.n);
      if (from < 0) continue;
      filled = std::max(filled, (b + 1) * block);
      for (std::size_t j = 0; j < count; ++j) {
        ++run.checked;
        bool right = true;
        for (std::size_t k = 0; k < t.size; ++k)
          right = right && got[b * block + j * t.size + k] == byte_of(from, r, j, k);
        if (!right && ++run.wrong <= 5)
          fmt::print("{}: rank {} block {} element {} from rank {} is wrong\n", what, r, b, j, from);
      }
    }
    for (std::size_t at = filled; at < got.size(); ++at)
      if (got[at] != kUnwritten && ++run.wrong <= 5)
        fmt::print("{}: rank {} byte {} past its receive was written\n", what, r, at);
    if (p == Pattern::lone_pairs) continue;
    std::vector<float> ar(kAllreduceCount);
    if (!cuda_ok(cudaMemcpy(ar.data(), run.buffers[r].ar_recv, ar.size() * 4, cudaMemcpyDeviceToHost), "read ar")) {
      ++run.wrong;
      continue;
    }
    for (std::size_t j = 0; j < kAllreduceCount; ++j) {
      ++run.checked;
      const float want = static_cast<float>(run.n * (run.n + 1) / 2 * static_cast<int>(j % 13 + 1));
      if (ar[j] != want && ++run.wrong <= 5)
        fmt::print("{}: rank {} allreduce element {} is {} not {}\n", what, r, j, ar[j], want);
    }
  }
}

}  // namespace

int check_point_to_point(const CheckArgs& a) {
  Run run;
  run.n = a.init_all;
  const std::vector<std::size_t> counts = a.counts.empty() ? std::vector<std::size_t>{0, 1, 7, 1028, 65540} : a.counts;
  std::size_t most = 0;
  for (std::size_t c : counts) most = std::max(most, c);
  run.bytes = std::max<std::size_t>(1, most * 8 * run.n);
  run.comms.assign(run.n, nullptr);
  const std::vector<int> devlist(run.n, 0);
  if (!ok(ncclCommInitAll(run.comms.data(), run.n, devlist.data()), "ncclCommInitAll", nullptr)) return 1;
  if (!cuda_ok(cudaSetDevice(0), "cudaSetDevice") || !cuda_ok(cudaStreamCreate(&run.stream), "cudaStreamCreate"))
    return 1;
  run.buffers.resize(run.n);
  for (RankBuffers& b : run.buffers)
    if (!cuda_ok(cudaMalloc(&b.send, run.bytes), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&b.recv, run.bytes + kGuard), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&b.ar_send, kAllreduceCount * 4), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&b.ar_recv, kAllreduceCount * 4), "cudaMalloc"))
      return 1;
  for (Pattern p : kPatterns)
    for (const Type& t : kTypes)
      for (std::size_t count : counts) {
        const std::string what = fmt::format("{} {} x {} on {} ranks", pattern_name(p), count, t.name, run.n);
        if (!fill(run, p, t, count) || !issue_case(run, p, t, count, what) ||
            !cuda_ok(cudaStreamSynchronize(run.stream), what.c_str())) {
          ++run.wrong;
          continue;
        }
        check(run, p, t, count, what);
      }
  fmt::print("nccl p2p {} ranks: {} elements checked, {} wrong\n", run.n, run.checked, run.wrong);
  for (RankBuffers& b : run.buffers)
    for (void* ptr : {static_cast<void*>(b.send), static_cast<void*>(b.recv), static_cast<void*>(b.ar_send),
                      static_cast<void*>(b.ar_recv)})
      (void)cudaFree(ptr);
  (void)cudaStreamDestroy(run.stream);
  bool destroyed = true;
  for (ncclComm_t c : run.comms) destroyed = ok(ncclCommDestroy(c), "ncclCommDestroy", nullptr) && destroyed;
  return run.wrong == 0 && destroyed ? 0 : 1;
}

}  // namespace canopy::nccl_check
