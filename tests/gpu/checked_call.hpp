// CheckedCallSetup and run_checked_call: the buffers a case's calls run on, and one collective call through a
// Communicator on them, waited for and checked element by element, for the GPU tests that run many calls per case
// (hybrid_gpu_test, copy_engine_gpu_test).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/jit/jit.hpp"
#include "bench/harness/test_pattern.hpp"

namespace canopy {

// What a case's checked calls run on: the pattern kernels, CollectiveBuffers of `bytes` per rank each way, and a
// second stream per GPU (its ranks share it) for calls on other streams than the buffers'.
class CheckedCallSetup {
 public:
  CheckedCallSetup() = default;
  CheckedCallSetup(const CheckedCallSetup&) = delete;
  CheckedCallSetup& operator=(const CheckedCallSetup&) = delete;
  ~CheckedCallSetup() {
    for (const auto& [ordinal, stream] : streams_) {
      (void)cudaSetDevice(ordinal);
      (void)cudaStreamDestroy(stream);
    }
  }

  ::testing::AssertionResult make(const Communicator& comm, std::uint64_t bytes) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, comm.device_of_rank(0)) != cudaSuccess)
      return ::testing::AssertionFailure() << "device properties: " << cudaGetErrorString(cudaGetLastError());
    try {
      Jit jit(DiskCache::from_environment());
      patterns_ = std::make_unique<PatternKernels>(jit, fmt::format("sm_{}{}", prop.major, prop.minor));
    } catch (const Error& e) {
      return ::testing::AssertionFailure() << "pattern kernels: " << e.what();
    }
    if (Status s = CollectiveBuffers::create(comm, bytes, bytes, *patterns_, &buffers_); !s.ok())
      return ::testing::AssertionFailure() << "buffers: " << s.message();
    for (int r = 0; r < comm.ranks(); ++r) {
      const int ordinal = comm.device_of_rank(r);
      if (!streams_.count(ordinal)) {
        cudaStream_t s = nullptr;
        if (cudaSetDevice(ordinal) != cudaSuccess ||
            cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
          return ::testing::AssertionFailure()
                 << "stream on GPU " << ordinal << ": " << cudaGetErrorString(cudaGetLastError());
        streams_[ordinal] = s;
      }
      other_.push_back(streams_[ordinal]);
    }
    return ::testing::AssertionSuccess();
  }

  CollectiveBuffers& buffers() { return *buffers_; }
  const std::vector<cudaStream_t>& other_streams() const { return other_; }  // by rank

 private:
  std::unique_ptr<PatternKernels> patterns_;
  std::unique_ptr<CollectiveBuffers> buffers_;
  std::map<int, cudaStream_t> streams_;  // by CUDA ordinal
  std::vector<cudaStream_t> other_;
};

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
