// canopy_nccl_check --mode bad-argument: one rank's refused collective must not hang the others. Every rank makes
// --bad-call good allreduces (checked), then the same allreduce, where rank --bad-rank passes a bad argument (--bad
// null: recvbuff NULL, refused by the library's checks; --bad oversized: a count beyond its buffers, refused by the
// runtime's pointer checks). That rank must get ncclInvalidArgument at once; every other rank's call is queued, and
// its stream must end and ncclCommGetAsyncError report ncclRemoteError naming the bad rank within 30 s (the test asks
// for 5 s with the stall check off); a later call then fails at once. --bad-kind alltoall makes that call an
// ncclAlltoAll of `count` elements per peer, which across processes runs as one collective on the all-to-all kernels
// (the others' parts wait for the bad rank's exactly as an allreduce's do). Prints "process R: refused its call at T
// ms (FUNCTION): ..." (the bad rank) or "process R: call K ended at T ms: ..." (the others); a rank still waiting after
// 30 s says so and exits 1 without tearing down (it cannot).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/gpu/processes/nccl_check.hpp"
#include "tests/gpu/processes/nccl_check_cases.hpp"

namespace canopy::nccl_check {

namespace {

// Polls the stream and the communicator until the stream has ended and an asynchronous error is reported, or 30 s.
bool wait_for_failure(const CheckRank& c, ncclResult_t* async) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool stream_done = false;
  *async = ncclSuccess;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!stream_done) {
      const cudaError_t q = cudaStreamQuery(c.stream);
      stream_done = q != cudaErrorNotReady;
      if (q != cudaSuccess && q != cudaErrorNotReady) fmt::print(stderr, "cudaStreamQuery: {}\n", cudaGetErrorString(q));
    }
    if (*async == ncclSuccess && ncclCommGetAsyncError(c.comm, async) != ncclSuccess) return false;
    if (stream_done && *async != ncclSuccess) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

int check_bad_argument(const CheckRank& c) {
  const CheckArgs& a = *c.args;
  const std::size_t count = a.counts.empty() ? 1031 : a.counts[0];
  const bool alltoall = a.bad_kind == "alltoall";
  if (!alltoall && a.bad_kind != "allreduce") {
    fmt::print(stderr, "--bad-kind '{}': expected allreduce or alltoall\n", a.bad_kind);
    return 2;
  }
  // An all-to-all's buffers hold a block per peer.
  const std::size_t elements = alltoall ? count * static_cast<std::size_t>(c.nranks) : count;
  float *send = nullptr, *recv = nullptr;
  if (!cuda_ok(cudaMalloc(&send, elements * sizeof(float)), "cudaMalloc") ||
      !cuda_ok(cudaMalloc(&recv, elements * sizeof(float)), "cudaMalloc"))
    return 1;
  // The call that rank --bad-rank makes with a bad argument (a null receive buffer, or a count beyond its buffers).
  const auto call = [&](float* to, std::size_t n) {
    return alltoall ? ncclAlltoAll(send, to, n, ncclFloat32, c.comm, c.stream)
                    : ncclAllReduce(send, to, n, ncclFloat32, ncclSum, c.comm, c.stream);
  };
  const char* function = alltoall ? "ncclAlltoAll" : "ncclAllReduce";
  const std::vector<float> in = inputs(Case::allreduce, count, c.rank, c.nranks, 0);
  if (!cuda_ok(cudaMemcpy(send, in.data(), count * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy")) return 1;
  std::size_t wrong = 0;
  std::vector<float> got(count);
  for (int k = 0; k < a.bad_call; ++k) {
    if (!ok(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, c.comm, c.stream), "ncclAllReduce", c.comm)) return 1;
    if (!cuda_ok(cudaMemcpyAsync(got.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost, c.stream), "copy") ||
        !cuda_ok(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize"))
      return 1;
    wrong += compare(got, expected(Case::allreduce, count, c.rank, c.nranks, 0), "good allreduce", c.rank);
  }
  if (c.rank == a.bad_rank) {
    const bool null = a.bad == "null";
    const ncclResult_t r = call(null ? nullptr : recv, null ? count : count * 64);
    fmt::print("process {}: refused its call at {} ms ({}): {}: {}\n", c.rank, now_ms(), function,
               ncclGetErrorString(r), ncclGetLastError(c.comm));
    std::fflush(stdout);
    if (r != ncclInvalidArgument) {
      fmt::print(stderr, "process {}: expected ncclInvalidArgument\n", c.rank);
      return 1;
    }
    ncclResult_t async = ncclSuccess;
    if (!ok(ncclCommGetAsyncError(c.comm, &async), "ncclCommGetAsyncError", c.comm)) return 1;
    fmt::print("process {}: its own communicator: {}\n", c.rank, ncclGetErrorString(async));
  } else {
    const ncclResult_t r = call(recv, count);
    ncclResult_t async = ncclSuccess;
    const bool ended = wait_for_failure(c, &async);
    if (!ended) {
      fmt::print("process {}: call {} still waiting after 30 s (returned {}, async {})\n", c.rank, a.bad_call,
                 ncclGetErrorString(r), ncclGetErrorString(async));
      std::fflush(stdout);
      _exit(1);  // its kernel still waits: no teardown can end
    }
    fmt::print("process {}: call {} ended at {} ms: returned {}, async error {}: {}\n", c.rank, a.bad_call, now_ms(),
               ncclGetErrorString(r), ncclGetErrorString(async), ncclGetLastError(c.comm));
    const ncclResult_t later = ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, c.comm, c.stream);
    fmt::print("process {}: a later call returned {}\n", c.rank, ncclGetErrorString(later));
    if (async != ncclRemoteError || later == ncclSuccess) return 1;
  }
  cudaFree(send);
  cudaFree(recv);
  fmt::print("nccl rank {}: bad-argument: {} wrong before it\n", c.rank, wrong);
  return wrong == 0 ? 0 : 1;
}

int check_teardown_work(const CheckRank& c) {
  std::size_t wrong = 0;
  for (std::size_t count : {std::size_t{1031}, std::size_t{262147}}) {  // the LL protocol, the staged direct one
    float *send = nullptr, *recv = nullptr;
    if (!cuda_ok(cudaMalloc(&send, count * sizeof(float)), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&recv, count * sizeof(float)), "cudaMalloc"))
      return 1;
    const std::vector<float> in = inputs(Case::allreduce, count, c.rank, c.nranks, 1);
    std::vector<float> got(count);
    if (!cuda_ok(cudaMemcpy(send, in.data(), count * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy") ||
        !ok(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, c.comm, c.stream), "ncclAllReduce", c.comm) ||
        !cuda_ok(cudaMemcpyAsync(got.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost, c.stream), "copy") ||
        !cuda_ok(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize"))
      return 1;
    wrong += compare(got, expected(Case::allreduce, count, c.rank, c.nranks, 1), "allreduce", c.rank);
    cudaFree(send);
    cudaFree(recv);
  }
  fmt::print("nccl rank {}: teardown work: {} wrong\n", c.rank, wrong);
  return wrong == 0 ? 0 : 1;
}

}  // namespace canopy::nccl_check
