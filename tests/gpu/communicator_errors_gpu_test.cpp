// The Communicator's errors on real GPUs (label gpu; SKIPPED without one): a real host pointer, a device buffer
// too small for the count, a buffer and a stream on the wrong GPU, an out-of-range root, a count past the kernels'
// range, a communicator asked for more devices than ranks, a call captured on one GPU's stream only. Each is a Status
// naming the argument, never a crash; the communicator keeps working afterwards. And one that is not an error: a
// call after the caller destroyed the last call's stream.
// tests/errors/collective_call_errors_test.cpp pins the wording.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "dsl/shipped_topologies.hpp"
#include "runtime/communicator.hpp"
#include "runtime/gpu_devices.hpp"
#include "tests/gpu/two_rank_communicator.hpp"

namespace canopy {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class CommunicatorErrorsOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    gpus_ = visible_gpu_count();
    if (gpus_ == 0) GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
    ASSERT_TRUE(two_rank_communicator(gpus_, &comm_).ok());
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(cudaSetDevice(comm_->device_of_rank(r)), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&send_[r], kCount * 4), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&recv_[r], kCount * 4), cudaSuccess);
      ASSERT_EQ(cudaMemset(send_[r], 0, kCount * 4), cudaSuccess);
    }
  }
  void TearDown() override {
    for (int r = 0; r < 2; ++r) cudaFree(send_[r]), cudaFree(recv_[r]);
  }
  Status allreduce(std::uint64_t count) {
    const std::vector<const void*> send{send_[0], send_[1]};
    const std::vector<void*> recv{recv_[0], recv_[1]};
    const std::vector<cudaStream_t> streams{nullptr, nullptr};
    return comm_->allreduce(send, recv, count, DataType::f32, ReduceOp::sum, streams);
  }
  static constexpr std::uint64_t kCount = 1000;
  int gpus_ = 0;
  std::unique_ptr<Communicator> comm_;
  void* send_[2] = {nullptr, nullptr};
  void* recv_[2] = {nullptr, nullptr};
};

// Not an error: the caller destroys the stream of the last call (its work may still be queued) and calls on another.
// The communicator orders the new call after the old stream's work without recording on the dead stream.
TEST_F(CommunicatorErrorsOnGpu, AStreamDestroyedAfterTheLastCallIsNoError) {
  for (int round = 0; round < 3; ++round) {
    std::vector<cudaStream_t> streams(2, nullptr);
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(cudaSetDevice(comm_->device_of_rank(r)), cudaSuccess);
      if (r == 0 || comm_->device_of_rank(1) != comm_->device_of_rank(0))
        ASSERT_EQ(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking), cudaSuccess);
      else
        streams[r] = streams[0];
    }
    const std::vector<const void*> send{send_[0], send_[1]};
    const std::vector<void*> recv{recv_[0], recv_[1]};
    const Status s = comm_->allreduce(send, recv, kCount, DataType::f32, ReduceOp::sum, streams);
    EXPECT_TRUE(s.ok()) << "round " << round << ": " << s.message();
    for (int r = 0; r < 2; ++r)
      if (r == 0 || streams[1] != streams[0]) {
        EXPECT_EQ(cudaStreamDestroy(streams[r]), cudaSuccess);
      }
  }
  EXPECT_TRUE(allreduce(kCount).ok());  // and on the default stream after them
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cudaSetDevice(comm_->device_of_rank(r)), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
}

TEST_F(CommunicatorErrorsOnGpu, HostPointerIsNamed) {
  std::vector<float> host(kCount);
  const std::vector<const void*> send{host.data(), send_[1]};
  const std::vector<void*> recv{recv_[0], recv_[1]};
  const std::vector<cudaStream_t> streams{nullptr, nullptr};
  const Status s = comm_->allreduce(send, recv, kCount, DataType::f32, ReduceOp::sum, streams);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_TRUE(contains(s.message(), "send[0]") && contains(s.message(), "not device memory")) << s.message();
  EXPECT_TRUE(allreduce(kCount).ok());  // still usable
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST_F(CommunicatorErrorsOnGpu, CountBeyondTheAllocation) {
  const Status s = allreduce(kCount + 1);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_TRUE(contains(s.message(), "needs 4004 bytes") && contains(s.message(), "allocation ends 4000 bytes after it"))
      << s.message();
}

TEST_F(CommunicatorErrorsOnGpu, CountTooLargeForTheKernels) {
  const Status s = allreduce(std::uint64_t{1} << 60);
  EXPECT_TRUE(contains(s.message(), "is too large")) << s.message();
}

TEST_F(CommunicatorErrorsOnGpu, RootOutOfRange) {
  const std::vector<const void*> send{send_[0], send_[1]};
  const std::vector<void*> recv{recv_[0], recv_[1]};
  const std::vector<cudaStream_t> streams{nullptr, nullptr};
  const Status s = comm_->broadcast(send, recv, kCount, DataType::f32, 5, streams);
  EXPECT_EQ(s.message(), "broadcast: root 5 is not a rank: use 0 to 1");
}

TEST_F(CommunicatorErrorsOnGpu, BufferAndStreamOnTheWrongGpu) {
  if (gpus_ < 2) GTEST_SKIP() << "needs two GPUs (one rank on each)";
  const std::vector<const void*> send{send_[0], send_[0]};  // rank 1's send lives on GPU 0
  const std::vector<void*> recv{recv_[0], recv_[1]};
  const std::vector<cudaStream_t> streams{nullptr, nullptr};
  Status s = comm_->allreduce(send, recv, kCount, DataType::f32, ReduceOp::sum, streams);
  EXPECT_TRUE(contains(s.message(), "send[1]") && contains(s.message(), "is on GPU 0, but rank 1 runs on GPU 1"))
      << s.message();
  cudaStream_t gpu0_stream = nullptr;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&gpu0_stream), cudaSuccess);
  const std::vector<const void*> good_send{send_[0], send_[1]};
  const std::vector<cudaStream_t> wrong{gpu0_stream, gpu0_stream};
  s = comm_->allreduce(good_send, recv, kCount, DataType::f32, ReduceOp::sum, wrong);
  EXPECT_TRUE(contains(s.message(), "streams[1] belongs to GPU 0, but rank 1 runs on GPU 1")) << s.message();
  cudaStreamDestroy(gpu0_stream);
}

// A call whose streams capture a CUDA graph on one GPU but not on the other is refused before anything is queued
// (half of it would run now, half at each replay); the capture stays usable and the communicator keeps working.
// Capturing every stream works: graph_capture_gpu_test.cpp.
TEST_F(CommunicatorErrorsOnGpu, CapturingOneGpusStreamOnlyIsRefused) {
  if (gpus_ < 2) GTEST_SKIP() << "needs two GPUs (a stream on each)";
  std::vector<cudaStream_t> streams(2);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cudaSetDevice(comm_->device_of_rank(r)), cudaSuccess);
    if (r == 0 || comm_->device_of_rank(1) != comm_->device_of_rank(0))
      ASSERT_EQ(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking), cudaSuccess);
    else
      streams[1] = streams[0];  // both ranks on one GPU share its stream
  }
  const std::vector<const void*> send{send_[0], send_[1]};
  const std::vector<void*> recv{recv_[0], recv_[1]};
  ASSERT_EQ(cudaSetDevice(comm_->device_of_rank(0)), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const Status s = comm_->allreduce(send, recv, kCount, DataType::f32, ReduceOp::sum, streams);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(streams[0], &graph), cudaSuccess) << "the refused call broke the capture";
  EXPECT_EQ(s.code(), StatusCode::unsupported) << s.message();
  EXPECT_TRUE(contains(s.message(), "streams[0]") && contains(s.message(), "is capturing a CUDA graph but streams[1]"))
      << s.message();
  size_t nodes = 1;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 0u) << "nothing was queued into the graph";
  cudaGraphDestroy(graph);
  const Status after = comm_->allreduce(send, recv, kCount, DataType::f32, ReduceOp::sum, streams);
  EXPECT_TRUE(after.ok()) << after.message();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cudaSetDevice(comm_->device_of_rank(r)), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(streams[r]), cudaSuccess);
  }
  cudaStreamDestroy(streams[0]);
  if (streams[1] != streams[0]) cudaStreamDestroy(streams[1]);
}

TEST(CommunicatorCreateOnGpu, MoreDevicesThanRanksIsRefused) {
  const int gpus = visible_gpu_count();
  if (gpus < 2) GTEST_SKIP() << "needs two GPUs";
  CommunicatorOptions o;
  o.topology = load_topology("h200x2");
  o.gpus = {"gpu0"};  // one rank
  o.devices = {0, 1};
  std::unique_ptr<Communicator> comm;
  const Status s = Communicator::create(o, &comm);
  EXPECT_TRUE(contains(s.message(), "2 devices given for 1 ranks")) << s.message();
}

TEST(CommunicatorCreateOnGpu, UnknownDeviceIsRefused) {
  if (visible_gpu_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  CommunicatorOptions o;
  o.topology = load_topology("h200x2");
  o.devices = {0, 77};
  std::unique_ptr<Communicator> comm;
  const Status s = Communicator::create(o, &comm);
  EXPECT_TRUE(contains(s.message(), "device 77 does not exist")) << s.message();
}

}  // namespace
}  // namespace canopy
