// run_checked_call: one collective call through a Communicator on CollectiveBuffers, waited for and checked element by
// element, for the GPU tests that run many calls per case (hybrid_gpu_test, copy_engine_gpu_test).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "runtime/collective_buffers.hpp"
#include "runtime/communicator.hpp"

namespace canopy {

// Sets up `spec` (in place or not) and runs it through `comm` on the buffers' streams, or on `streams` once the inputs
// are written when given; waits for every rank's stream and checks every output element.
inline ::testing::AssertionResult run_checked_call(Communicator& comm, CollectiveBuffers& buffers,
                                                   const CheckSpec& spec, bool in_place,
                                                   const std::vector<cudaStream_t>* streams) {
  CollectiveCall call;
  if (Status s = buffers.set_up(spec, in_place, &call); !s.ok())
    return ::testing::AssertionFailure() << "set up: " << s.message();
  if (streams) {
    if (Status s = buffers.synchronize(); !s.ok()) return ::testing::AssertionFailure() << "inputs: " << s.message();
    call.streams = *streams;
  }
  if (Status s = comm.run(call); !s.ok()) return ::testing::AssertionFailure() << "run: " << s.message();
  for (int r = 0; r < comm.ranks(); ++r) {
    if (cudaSetDevice(comm.device_of_rank(r)) != cudaSuccess || cudaStreamSynchronize(call.streams[r]) != cudaSuccess)
      return ::testing::AssertionFailure() << "rank " << r << ": " << cudaGetErrorString(cudaGetLastError());
  }
  CheckResult result;
  if (Status s = buffers.check(spec, call, &result); !s.ok())
    return ::testing::AssertionFailure() << "check: " << s.message();
  if (result.wrong > 0)
    return ::testing::AssertionFailure() << result.wrong << " of " << result.checked
                                         << " elements wrong: " << (result.examples.empty() ? "" : result.examples[0]);
  if (result.checked == 0) return ::testing::AssertionFailure() << "no element checked";
  return ::testing::AssertionSuccess();
}

}  // namespace canopy
