// Launching on several GPUs (label gpu; SKIPPED with fewer than two): one after another from the caller, through
// awake launch helpers (runtime/launch/launch_crew.hpp), and through helpers that are asleep at every call (a 1 us spin),
// where the caller launches their GPUs itself. Each mode runs the low-latency, LL128, direct and tree kernels, on the
// same streams and on streams that change between calls, and every output element is checked.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <thread>

#include "topology/shipped_topologies.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/jit/jit.hpp"

namespace canopy {
namespace {

enum class Mode { serial, helpers, helpers_asleep };

class LaunchModesOnGpu : public ::testing::TestWithParam<Mode> {};

TEST_P(LaunchModesOnGpu, EveryProtocolIsCorrect) {
  if (visible_gpu_count() < 2)
    GTEST_SKIP() << "fewer than two CUDA devices visible: launch helpers exist only with several GPUs";
  CommunicatorOptions o;
  o.topology = load_topology("h200x2");
  o.devices = {0, 1};
  o.launch_threads = GetParam() != Mode::serial;
  o.launch_spin = std::chrono::microseconds(GetParam() == Mode::helpers_asleep ? 1 : 200);
  o.ll128_bytes = 2 << 20;  // 2^18 + 5 elements: LL128
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  ASSERT_TRUE(created.ok()) << created.message();

  const std::uint64_t top = std::uint64_t{1} << 24;  // f32: 64 MiB per rank, the trees
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  Jit jit(DiskCache::from_environment());
  PatternKernels patterns(jit, fmt::format("sm_{}{}", prop.major, prop.minor));
  std::unique_ptr<CollectiveBuffers> buffers;
  ASSERT_TRUE(CollectiveBuffers::create(*comm, top * 4 * 2, top * 4 * 2, patterns, &buffers).ok());

  // A second stream per rank: calls alternate between the buffers' streams and these.
  std::vector<cudaStream_t> other(2);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cudaSetDevice(comm->device_of_rank(r)), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&other[r], cudaStreamNonBlocking), cudaSuccess);
  }
  int runs = 0;
  for (Collective c : {Collective::allreduce, Collective::broadcast, Collective::reducescatter})
    for (std::uint64_t count : {std::uint64_t{1000}, (std::uint64_t{1} << 18) + 5, std::uint64_t{1} << 20, top / 2})
      for (int repeat = 0; repeat < 4; ++repeat) {
        if (GetParam() == Mode::helpers_asleep) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        CheckSpec s{c, DataType::f32, ReduceOp::sum, 1, 2, count, 0};
        s.seed = 7919u * static_cast<std::uint64_t>(++runs);
        CollectiveCall call;
        ASSERT_TRUE(buffers->set_up(s, false, &call).ok());
        if (repeat % 2 == 1) {  // on the other streams, once the inputs are written
          ASSERT_TRUE(buffers->synchronize().ok());
          call.streams = other;
        }
        const Status ran = comm->run(call);
        ASSERT_TRUE(ran.ok()) << ran.message();
        for (int r = 0; r < 2; ++r) {
          ASSERT_EQ(cudaSetDevice(comm->device_of_rank(r)), cudaSuccess);
          ASSERT_EQ(cudaStreamSynchronize(other[r]), cudaSuccess);
        }
        CheckResult result;
        ASSERT_TRUE(buffers->check(s, call, &result).ok());
        EXPECT_EQ(result.wrong, 0u) << to_string(c) << " count " << count << " repeat " << repeat << ": "
                                    << (result.examples.empty() ? "" : result.examples[0]);
        EXPECT_GT(result.checked, 0u);
      }
  for (int r = 0; r < 2; ++r) (void)cudaStreamDestroy(other[r]);
}

INSTANTIATE_TEST_SUITE_P(Modes, LaunchModesOnGpu, ::testing::Values(Mode::serial, Mode::helpers, Mode::helpers_asleep),
                         [](const auto& info) {
                           switch (info.param) {
                             case Mode::serial:
                               return std::string("serial");
                             case Mode::helpers:
                               return std::string("helpers");
                             default:
                               return std::string("helpers_asleep");
                           }
                         });

}  // namespace
}  // namespace canopy
