// canopy_nccl_check --mode watchdog-abort: what PyTorch's watchdog does when a collective hangs. After one allreduce
// together, rank 1 stops calling (it sleeps, then exits without a teardown); rank 0 makes another, which waits for rank
// 1: on the GPU, or on the host where the call first meets the other process there (CANOPY_PEER_BUFFERS trades the
// callers' buffers each call). A second thread of rank 0, the watchdog, runs beside the call from its start, as
// ProcessGroupNCCL's does: it polls ncclCommGetAsyncError for 1 s (it must say ncclSuccess while the call only waits: a
// slow peer is no error), then calls ncclCommAbort, as the watchdog does on a timeout. The abort must return, the hung
// call must have returned to its caller, and its stream must have ended, each within 5 s of the abort (run with the
// stall check off, CANOPY_STALL_TIMEOUT_S=0, so that only the abort ends it). Prints "process 0: while the allreduce
// waited on the host|GPU, ncclCommGetAsyncError said E; abort returned R after A ms, the call returned C (after B ms),
// the stream ended after S ms" and returns 0 when all hold; run with --teardown exit (the handle is gone).
#include <fmt/format.h>

#include <atomic>
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
  // One call together first: the first call of a size may grow areas every process maps, an agreement on the host
  // whatever the way of running; the hung call below waits only where this way of running waits each call.
  if (!ok(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, c.comm, c.stream), "ncclAllReduce", c.comm) ||
      !cuda_ok(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize"))
    return 1;
  if (c.rank != 0) {
    fmt::print("process {}: stops calling at {} ms\n", c.rank, now_ms());
    std::this_thread::sleep_for(std::chrono::seconds(12));
    return 0;
  }
  ncclResult_t polled = ncclSuccess, abort_result = ncclInternalError;
  long long abort_ms = -1;
  std::atomic<bool> calling{false};
  Clock::time_point abort_started;
  std::atomic<bool> aborting{false};
  std::thread watchdog([&] {
    while (!calling.load()) std::this_thread::yield();
    const auto until = Clock::now() + std::chrono::seconds(1);
    while (Clock::now() < until && polled == ncclSuccess) {
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(c.comm, &async) != ncclSuccess) async = ncclInternalError;
      polled = async;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    abort_started = Clock::now();
    aborting.store(true);
    abort_result = ncclCommAbort(c.comm);
    abort_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - abort_started).count();
  });
  calling.store(true);
  const ncclResult_t called = ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, c.comm, c.stream);
  const bool returned_after_abort = aborting.load();  // it waited on the host until the abort ended it
  const auto returned = Clock::now();
  watchdog.join();
  // From the abort's start until the hung call returned (0 where it returned first: it waited on the GPU).
  const long long call_ms =
      returned_after_abort ? std::chrono::duration_cast<std::chrono::milliseconds>(returned - abort_started).count()
                           : 0;
  long long stream_ms = -1;  // from the abort's start until the hung call's stream has ended
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    if (cudaStreamQuery(c.stream) != cudaErrorNotReady) {
      stream_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - abort_started).count();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  fmt::print("process 0: while the allreduce waited on the {}, ncclCommGetAsyncError said {}; abort returned {} after "
             "{} ms, the call returned {} (after {} ms), the stream ended after {} ms\n",
             returned_after_abort ? "host" : "GPU", ncclGetErrorString(polled), ncclGetErrorString(abort_result),
             abort_ms, ncclGetErrorString(called), call_ms, stream_ms);
  // A call the abort ended may say so (an error); one that only queued its work must have succeeded.
  const bool call_right = returned_after_abort ? call_ms <= 5000 : called == ncclSuccess;
  const bool right = polled == ncclSuccess && abort_result == ncclSuccess && abort_ms >= 0 && abort_ms <= 5000 &&
                     call_right && stream_ms >= 0 && stream_ms <= 5000;
  return right ? 0 : 1;
}

}  // namespace canopy::nccl_check
