// canopy_nccl_check --mode watchdog-abort: what PyTorch's watchdog does when a collective hangs. After one allreduce
// together, rank 1 stops calling (it sleeps, then exits without a teardown); rank 0 makes another, which waits for rank
// 1 on the GPU. A second
// thread of rank 0, the watchdog, polls ncclCommGetAsyncError (it must say ncclSuccess while the call only waits: a
// slow peer is no error), then calls ncclCommAbort from its own thread, as ProcessGroupNCCL's watchdog does on a
// timeout. The abort must return, and the hung allreduce's stream must end, within 5 s each (run with the stall check
// off, CANOPY_STALL_TIMEOUT_S=0, so that only the abort ends it). Prints "process 0: abort returned after A ms, the
// stream ended after S ms" and returns 0 when both are within 5 s; run with --teardown exit (the handle is gone).
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "tests/gpu/processes/nccl_check.hpp"
#include "tests/gpu/processes/nccl_check_cases.hpp"

namespace canopy::nccl_check {

int check_watchdog_abort(const CheckRank& c) {
  using Clock = std::chrono::steady_clock;
  const std::size_t count = 262147;
  float *send = nullptr, *recv = nullptr;
  if (!cuda_ok(cudaMalloc(&send, count * sizeof(float)), "cudaMalloc") ||
      !cuda_ok(cudaMalloc(&recv, count * sizeof(float)), "cudaMalloc"))
    return 1;
  // One call together first: the first call of a size may grow areas every process maps, an agreement on the host;
  // the hung call below must be one that only waits on the GPU, as a training step's is.
  if (!ok(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, c.comm, c.stream), "ncclAllReduce", c.comm) ||
      !cuda_ok(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize"))
    return 1;
  if (c.rank != 0) {
    fmt::print("process {}: stops calling at {} ms\n", c.rank, now_ms());
    std::this_thread::sleep_for(std::chrono::seconds(12));
    return 0;
  }
  if (!ok(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, c.comm, c.stream), "ncclAllReduce", c.comm)) return 1;
  ncclResult_t polled = ncclSuccess, abort_result = ncclInternalError;
  long long abort_ms = -1;
  Clock::time_point abort_started;
  std::thread watchdog([&] {
    const auto until = Clock::now() + std::chrono::seconds(1);
    while (Clock::now() < until && polled == ncclSuccess) {
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(c.comm, &async) != ncclSuccess) async = ncclInternalError;
      polled = async;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    abort_started = Clock::now();
    abort_result = ncclCommAbort(c.comm);
    abort_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - abort_started).count();
  });
  watchdog.join();
  long long stream_ms = -1;  // from the abort's start until the hung call's stream has ended
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    if (cudaStreamQuery(c.stream) != cudaErrorNotReady) {
      stream_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - abort_started).count();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  fmt::print("process 0: while the allreduce waited, ncclCommGetAsyncError said {}; abort returned {} after {} ms, the "
             "stream ended after {} ms\n",
             ncclGetErrorString(polled), ncclGetErrorString(abort_result), abort_ms, stream_ms);
  const bool right = polled == ncclSuccess && abort_result == ncclSuccess && abort_ms >= 0 && abort_ms <= 5000 &&
                     stream_ms >= 0 && stream_ms <= 5000;
  return right ? 0 : 1;
}

}  // namespace canopy::nccl_check
