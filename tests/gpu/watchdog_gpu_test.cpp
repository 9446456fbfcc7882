// The watchdog on real GPUs (label gpu; needs two GPUs, SKIPPED otherwise): GPU 1's stream is held behind a host
// function, so GPU 0's half of an allreduce waits for a peer that has not entered the launch. With
// CANOPY_WATCHDOG_S set, the log names the GPU, rank, tree and what it waits for; once GPU 1 is let go the
// collective finishes with the right result and the watchdog says so.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

#include "topology/shipped_topologies.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {
namespace {

// Holds the stream until the test lets it go (at most 20 s, so a broken test cannot hang the run).
void CUDART_CB hold(void* gate) {
  static_cast<std::shared_future<void>*>(gate)->wait_for(std::chrono::seconds(20));
}

// A 4 MiB allreduce: the direct protocol's kernel by default, the planned trees' with the direct protocol off.
class WatchdogOnGpu : public ::testing::TestWithParam<bool> {};

TEST_P(WatchdogOnGpu, NamesWhatAStuckCollectiveWaitsFor) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "needs two GPUs (a launch on each that can wait for the other)";
  const bool direct = GetParam();
  setenv("CANOPY_WATCHDOG_S", "0.5", 1);
  std::mutex mutex;
  std::string log;
  CommunicatorOptions o;
  o.topology = load_topology("h200x2");
  if (!direct) o.direct_bytes = 0;
  o.log_sink = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mutex);
    log += std::string(line) + "\n";
  };
  std::unique_ptr<Communicator> comm;
  const Status made = Communicator::create(o, &comm);
  unsetenv("CANOPY_WATCHDOG_S");
  ASSERT_TRUE(made.ok()) << made.message();
  Jit jit(DiskCache::from_environment());
  PatternKernels patterns(jit, "sm_90");
  std::unique_ptr<CollectiveBuffers> buffers;
  ASSERT_TRUE(CollectiveBuffers::create(*comm, 1 << 22, 1 << 22, patterns, &buffers).ok());
  const CheckSpec spec{Collective::allreduce, DataType::f32, ReduceOp::sum, 0, 2, 1 << 20, 42};
  CollectiveCall call;
  ASSERT_TRUE(buffers->set_up(spec, false, &call).ok());
  ASSERT_TRUE(buffers->synchronize().ok());
  // Compile and load before holding GPU 1: loading a module may wait for the GPU's work.
  CollectiveSpec prepared[] = {{Collective::allreduce, DataType::f32, ReduceOp::sum, 0,
                                comm->is_large(Collective::allreduce, spec.count, DataType::f32)}};
  prepared[0].direct = direct;
  ASSERT_TRUE(comm->prepare(prepared).ok());

  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(buffers->streams()[1], hold, &gate), cudaSuccess);
  ASSERT_EQ(comm->is_direct(Collective::allreduce, spec.count, DataType::f32), direct);
  const Status launched = comm->run(call);
  ASSERT_TRUE(launched.ok()) << launched.message();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_NE(log.find("has not finished after 0.5 s on GPU 0"), std::string::npos) << log;
    EXPECT_NE(log.find("GPU 0 rank gpu0"), std::string::npos) << log;
    EXPECT_NE(log.find("the peer has not entered this launch"), std::string::npos) << log;
    if (direct) {
      EXPECT_NE(log.find("direct allreduce, block 0"), std::string::npos) << log;
    }
  }
  release.set_value();
  CheckResult result;
  ASSERT_TRUE(buffers->check(spec, call, &result).ok());
  EXPECT_EQ(result.wrong, 0u) << (result.examples.empty() ? "" : result.examples[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_NE(log.find("finished after"), std::string::npos) << log;
  std::cout << log;
}

INSTANTIATE_TEST_SUITE_P(Protocols, WatchdogOnGpu, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "direct" : "trees"; });

}  // namespace
}  // namespace canopy
