// The Communicator's errors on real GPUs (label gpu; SKIPPED without one): a real host pointer, a device buffer
// too small for the count, a buffer and a stream on the wrong GPU, an out-of-range root, a count past the kernels'
// range, a communicator asked for more devices than ranks, a call captured on one GPU's stream only. Each is a Status
// naming the argument, never a crash; the communicator keeps working afterwards. And three that are not errors, whose
// calls must still be ordered: a call after the caller destroyed the last call's stream, one on a new stream that got
// the destroyed one's handle, and calls on cudaStreamPerThread from two threads.
// tests/errors/collective_call_errors_test.cpp pins the wording.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "topology/shipped_topologies.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/jit/nvrtc_compiler.hpp"
#include "tests/gpu/two_rank_communicator.hpp"

namespace canopy {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class CommunicatorErrorsOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    gpus_ = visible_gpu_count();
    if (gpus_ == 0) GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
    CommunicatorOptions o;
    o.ll128_bytes = 0;  // HeldCalls' 1 MiB allreduces take the direct protocol (LL128 takes them by default on 2 GPUs)
    ASSERT_TRUE(two_rank_communicator(gpus_, &comm_, o).ok());
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
  Status allreduce(std::uint64_t count, const std::vector<cudaStream_t>& streams = {nullptr, nullptr}) {
    const std::vector<const void*> send{send_[0], send_[1]};
    const std::vector<void*> recv{recv_[0], recv_[1]};
    return comm_->allreduce(send, recv, count, DataType::f32, ReduceOp::sum, streams);
  }
  // A new stream per rank's GPU (two ranks on one GPU share one, as one launch needs), into `streams` (two entries).
  void create_streams(std::vector<cudaStream_t>* streams) {
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(cudaSetDevice(comm_->device_of_rank(r)), cudaSuccess);
      if (r == 0 || comm_->device_of_rank(1) != comm_->device_of_rank(0))
        EXPECT_EQ(cudaStreamCreateWithFlags(&(*streams)[r], cudaStreamNonBlocking), cudaSuccess);
      else
        (*streams)[r] = (*streams)[0];
    }
  }
  std::vector<cudaStream_t> new_streams() {
    std::vector<cudaStream_t> streams(2, nullptr);
    create_streams(&streams);
    return streams;
  }
  static void destroy(const std::vector<cudaStream_t>& streams) {
    for (int r = 0; r < 2; ++r)
      if (r == 0 || streams[1] != streams[0]) {
        EXPECT_EQ(cudaStreamDestroy(streams[r]), cudaSuccess);
      }
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
    const std::vector<cudaStream_t> streams = new_streams();
    const Status s = allreduce(kCount, streams);
    EXPECT_TRUE(s.ok()) << "round " << round << ": " << s.message();
    destroy(streams);
  }
  EXPECT_TRUE(allreduce(kCount).ok());  // and on the default stream after them
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cudaSetDevice(comm_->device_of_rank(r)), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
}

// A kernel that keeps its stream busy for `ns` nanoseconds (the GPU's global timer), then sets `*done` (host memory
// mapped into the GPU), compiled by NVRTC.
class HoldKernel {
 public:
  explicit HoldKernel(int ordinal) {
    const SourceFile source{"canopy_test_hold.cu", R"(
extern "C" __global__ void canopy_test_hold(unsigned long long ns, volatile int* done) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
  *done = 1;
  __threadfence_system();
})"};
    CompileOptions options;
    options.arch = describe_gpus({ordinal}).front().arch;
    const CompiledModule module = compile_cuda(source, {}, options);
    EXPECT_EQ(cudaLibraryLoadData(&library_, module.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
              cudaSuccess);
    EXPECT_EQ(cudaLibraryGetKernel(&kernel_, library_, "canopy_test_hold"), cudaSuccess);
  }
  ~HoldKernel() { (void)cudaLibraryUnload(library_); }
  cudaError_t launch(cudaStream_t stream, unsigned long long ns, int* done) {
    void* args[] = {&ns, &done};
    return cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), dim3(1), dim3(1), args, 0, stream);
  }

 private:
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
};

// 1 MiB allreduces on a communicator of two ranks whose streams can be held up first by a HoldKernel: whether a call
// on other streams ended before the held call began. 1 MiB is the direct protocol's: a low-latency call waits for the
// acknowledgements of the call before, so it would end after it even unordered.
class HeldCalls {
 public:
  explicit HeldCalls(Communicator& comm) : comm_(comm) {
    EXPECT_EQ(comm_.protocol(Collective::allreduce, kCount, DataType::f32), Protocol::direct);
    EXPECT_EQ(
        cudaHostAlloc(reinterpret_cast<void**>(&held_), 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable),
        cudaSuccess);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(cudaSetDevice(comm_.device_of_rank(r)), cudaSuccess);
      EXPECT_EQ(cudaMalloc(&send_[r], kCount * 4), cudaSuccess);
      EXPECT_EQ(cudaMalloc(&recv_[r], kCount * 4), cudaSuccess);
      EXPECT_EQ(cudaMemset(send_[r], 0, kCount * 4), cudaSuccess);
      if (holds(r)) hold_[r] = std::make_unique<HoldKernel>(comm_.device_of_rank(r));
    }
  }
  ~HeldCalls() {
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(cudaSetDevice(comm_.device_of_rank(r)), cudaSuccess);
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(cudaFree(send_[r]), cudaSuccess);
      EXPECT_EQ(cudaFree(recv_[r]), cudaSuccess);
    }
    EXPECT_EQ(cudaFreeHost(held_), cudaSuccess);
  }
  Status allreduce(const std::vector<cudaStream_t>& streams) {
    const std::vector<const void*> send{send_[0], send_[1]};
    const std::vector<void*> recv{recv_[0], recv_[1]};
    return comm_.allreduce(send, recv, kCount, DataType::f32, ReduceOp::sum, streams);
  }
  // Holds each GPU's stream (rank r's for hold_ns[r], 100 ms unless given), then a call follows on them: the held
  // call.
  void held_call(const std::vector<cudaStream_t>& streams,
                 std::array<unsigned long long, 2> hold_ns = {100'000'000ull, 100'000'000ull}) {
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(cudaSetDevice(comm_.device_of_rank(r)), cudaSuccess);
      held_[r] = 0;
      if (holds(r)) {
        EXPECT_EQ(hold_[r]->launch(streams[r], hold_ns[r], held_ + r), cudaSuccess);
      } else {
        held_[r] = 1;
      }
    }
    EXPECT_TRUE(allreduce(streams).ok());
  }
  // Has rank r's hold ended (before the held call began on its GPU)?
  bool held_call_began(int r) const { return *static_cast<volatile int*>(held_ + r) == 1; }

 private:
  // Rank r holds its GPU: rank 0, and rank 1 on a GPU of its own (two ranks on one GPU share its stream).
  bool holds(int r) const { return r == 0 || comm_.device_of_rank(1) != comm_.device_of_rank(0); }
  static constexpr std::uint64_t kCount = 1 << 18;
  Communicator& comm_;
  void* send_[2] = {nullptr, nullptr};
  void* recv_[2] = {nullptr, nullptr};
  std::unique_ptr<HoldKernel> hold_[2];
  int* held_ = nullptr;  // per rank: its GPU's hold kernel has ended
};

// Not an error either, and not the same stream: the CUDA runtime gives a new stream the handle of one just destroyed
// while the destroyed one's kernels still run. A call on the new stream must still wait for the last call (they share
// the communicator's memory). Whether the handle comes back depends on the heap, so the test takes several rounds and
// says in how many it did.
TEST_F(CommunicatorErrorsOnGpu, ANewStreamWithADestroyedStreamsHandleWaitsForItsCalls) {
  constexpr int kRounds = 8;
  HeldCalls calls(*comm_);
  int reused = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::vector<cudaStream_t> old_streams = new_streams();
    EXPECT_TRUE(calls.allreduce(old_streams).ok());  // the communicator has used these streams before
    calls.held_call(old_streams);
    // The new streams' vector comes first: the runtime's stream handles are small blocks of the heap, and a vector
    // made between the destroy and the create would take the freed one.
    std::vector<cudaStream_t> streams(2, nullptr);
    destroy(old_streams);
    create_streams(&streams);
    reused += streams[0] == old_streams[0];
    EXPECT_TRUE(calls.allreduce(streams).ok());
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(cudaSetDevice(comm_->device_of_rank(r)), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(streams[r]), cudaSuccess);
      EXPECT_TRUE(calls.held_call_began(r))
          << "round " << round << ", rank " << r << ": the call on the new stream ended before the call on the "
          << "destroyed one began (" << (streams[0] == old_streams[0] ? "same handle" : "another handle") << ")";
    }
    destroy(streams);
  }
  std::printf("in %d of %d rounds the new stream got the destroyed one's handle\n", reused, kRounds);
}

// cudaStreamPerThread is one handle for every thread but a stream of each thread's own: a call on it from another
// thread is a call on another stream, and waits for the last call like one.
TEST_F(CommunicatorErrorsOnGpu, ThePerThreadStreamsOfTwoThreadsAreTwoStreams) {
  HeldCalls calls(*comm_);
  const std::vector<cudaStream_t> per_thread(2, cudaStreamPerThread);
  EXPECT_TRUE(calls.allreduce(per_thread).ok());
  std::thread other([&] { calls.held_call(per_thread); });
  other.join();
  EXPECT_TRUE(calls.allreduce(per_thread).ok());
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cudaSetDevice(comm_->device_of_rank(r)), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
    EXPECT_TRUE(calls.held_call_began(r))
        << "rank " << r << ": the call on this thread's stream ended before the other thread's call began";
  }
}

// With two GPUs a helper thread launches on the second (docs/measurements/performance-2026-11-23-issue-7-size-bands.md,
// "Launching on two GPUs at once"), but not for a call on cudaStreamPerThread: the kernel would go on the helper's own
// stream, and the caller's stream on GPU 1 would not hold the call. GPU 0 is held for 200 ms, GPU 1 for 20: GPU 1's
// part of the call cannot end before GPU 0's began, so once the caller's stream on GPU 1 is done, GPU 0's hold must
// have ended.
TEST_F(CommunicatorErrorsOnGpu, ACallOnThePerThreadStreamIsOnTheCallersStreamOnEveryGpu) {
  if (gpus_ < 2) GTEST_SKIP() << "needs two GPUs (a helper thread launches on the second)";
  HeldCalls calls(*comm_);
  const std::vector<cudaStream_t> per_thread(2, cudaStreamPerThread);
  for (int round = 0; round < 3; ++round) {
    calls.held_call(per_thread, {200'000'000ull, 20'000'000ull});
    ASSERT_EQ(cudaSetDevice(comm_->device_of_rank(1)), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
    EXPECT_TRUE(calls.held_call_began(0))
        << "round " << round << ": the caller's stream on GPU 1 was done before the call on GPU 0 began";
    ASSERT_EQ(cudaSetDevice(comm_->device_of_rank(0)), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
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
