// Communicator calls captured into a CUDA graph (label gpu; SKIPPED without a GPU). Two allreduces (a -> b, then
// b -> c) are captured into one graph across both GPUs' streams, once per protocol's size class (low latency,
// direct, trees); the graph is replayed with fresh inputs, eager calls of the same kernels in between, and every
// output is checked. The kernels take their epoch from a launch counter in GPU memory (templates/flags.cuh), so a
// replay's launches count like eager ones. Also: a call whose kernel is not loaded yet is refused inside a capture,
// the capture survives the refusal, and Communicator::prepare(call) loads it for a capture (through CapturedCalls,
// as `canopy bench --graph` captures), an avg's sum and division included.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "bench/harness/captured_calls.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "tests/gpu/two_rank_communicator.hpp"

namespace canopy {
namespace {

#define CAPTURE_CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x

struct CaptureCase {
  const char* name;
  std::uint64_t count;            // f32 elements per rank
  std::int64_t ll128_bytes = -1;  // >= 0: CommunicatorOptions::ll128_bytes
};
void PrintTo(const CaptureCase& c, std::ostream* os) { *os << c.name << ", count " << c.count; }

// Small integers: sums of two ranks, and twice that, are exact in f32.
float capture_input(int round, int rank, std::uint64_t j) {
  return static_cast<float>(static_cast<int>((j * 7 + rank * 5 + round * 3) % 17) - 8);
}

class GraphCaptureOnGpu : public ::testing::TestWithParam<CaptureCase> {
 protected:
  void SetUp() override {
    gpus_ = visible_gpu_count();
    if (gpus_ == 0) GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
    CommunicatorOptions o;
    if (GetParam().ll128_bytes >= 0) o.ll128_bytes = GetParam().ll128_bytes;
    ASSERT_TRUE(two_rank_communicator(gpus_, &comm_, o).ok());
    devices_ = comm_->device_of_rank(1) != comm_->device_of_rank(0) ? 2 : 1;
    const std::size_t bytes = GetParam().count * 4;
    for (int r = 0; r < 2; ++r) {
      CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(r)));
      for (float** p : {&a_[r], &b_[r], &c_[r]}) CAPTURE_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(p), bytes));
      if (r < devices_) {
        CAPTURE_CUDA_OK(cudaStreamCreateWithFlags(&stream_[r], cudaStreamNonBlocking));
      }
    }
    if (devices_ == 1) stream_[1] = stream_[0];  // both ranks on one GPU share its stream
  }
  void TearDown() override {
    if (!comm_) return;
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(comm_->device_of_rank(r));
      cudaFree(a_[r]), cudaFree(b_[r]), cudaFree(c_[r]);
      if (r < devices_) cudaStreamDestroy(stream_[r]);
    }
  }
  Status allreduce(float* const (&from)[2], float* const (&to)[2], std::uint64_t count) {
    const std::vector<const void*> send{from[0], from[1]};
    const std::vector<void*> recv{to[0], to[1]};
    const std::vector<cudaStream_t> streams{stream_[0], stream_[1]};
    return comm_->allreduce(send, recv, count, DataType::f32, ReduceOp::sum, streams);
  }
  void fill(int round) {
    const std::uint64_t n = GetParam().count;
    for (int r = 0; r < 2; ++r) {
      std::vector<float> host(n);
      for (std::uint64_t j = 0; j < n; ++j) host[j] = capture_input(round, r, j);
      CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(r)));
      CAPTURE_CUDA_OK(cudaMemcpy(a_[r], host.data(), n * 4, cudaMemcpyHostToDevice));
      // From pageable memory cudaMemcpy may return before its copy lands, and the test's streams do not wait for
      // the legacy stream that carries it.
      CAPTURE_CUDA_OK(cudaDeviceSynchronize());
    }
  }
  // Every element of both ranks' `out` is `times` x the sum of round `round`'s inputs.
  void expect(float* const (&out)[2], int round, float times, const std::string& what) {
    const std::uint64_t n = GetParam().count;
    int wrong = 0;
    for (int r = 0; r < 2; ++r) {
      std::vector<float> host(n);
      CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(r)));
      CAPTURE_CUDA_OK(cudaMemcpy(host.data(), out[r], n * 4, cudaMemcpyDeviceToHost));
      for (std::uint64_t j = 0; j < n; ++j) {
        const float want = times * (capture_input(round, 0, j) + capture_input(round, 1, j));
        if (host[j] != want && wrong++ < 5)
          ADD_FAILURE() << what << ", rank " << r << ", element " << j << ": " << host[j] << ", expected " << want;
      }
    }
    EXPECT_EQ(wrong, 0) << what;
  }
  // An allreduce a -> b with `op`, loaded by Communicator::prepare(call), then captured (through CapturedCalls, as
  // `canopy bench --graph` captures) into *captured.
  void prepare_and_capture(ReduceOp op, std::unique_ptr<CapturedCalls>* captured) {
    const std::vector<const void*> send{a_[0], a_[1]};
    const std::vector<void*> recv{b_[0], b_[1]};
    const std::vector<cudaStream_t> streams{stream_[0], stream_[1]};
    CollectiveCall call;
    call.send = send;
    call.recv = recv;
    call.streams = streams;
    call.count = GetParam().count;
    call.op = op;
    const Status prepared = comm_->prepare(call);
    ASSERT_TRUE(prepared.ok()) << prepared.message();
    std::vector<int> ordinals{comm_->device_of_rank(0)};
    if (devices_ == 2) ordinals.push_back(comm_->device_of_rank(1));
    const Status s = CapturedCalls::capture(
        ordinals, std::span<const cudaStream_t>(streams.data(), devices_), 1, [&] { return comm_->run(call); },
        captured);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  void synchronize() {
    for (int d = 0; d < devices_; ++d) {
      CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(d)));
      CAPTURE_CUDA_OK(cudaStreamSynchronize(stream_[d]));
    }
  }

  int gpus_ = 0, devices_ = 0;
  std::unique_ptr<Communicator> comm_;
  float* a_[2] = {nullptr, nullptr};
  float* b_[2] = {nullptr, nullptr};
  float* c_[2] = {nullptr, nullptr};
  cudaStream_t stream_[2] = {nullptr, nullptr};
};

TEST_P(GraphCaptureOnGpu, ReplaysMatchEagerCalls) {
  const std::uint64_t n = GetParam().count;
  const Protocol p = comm_->protocol(Collective::allreduce, n, DataType::f32);
  const std::string protocol = p == Protocol::low_latency ? "low_latency"
                               : p == Protocol::ll128     ? "ll128"
                               : p == Protocol::direct    ? "direct"
                                                          : "trees";
  ASSERT_EQ(protocol, GetParam().name) << "the case's count runs another protocol";
  fill(0);
  ASSERT_TRUE(allreduce(a_, b_, n).ok());  // loads the kernel: a capture cannot compile
  synchronize();
  expect(b_, 0, 1, "eager call before the capture");

  // One capture across both GPUs: GPU 1's stream joins GPU 0's through an event, and rejoins it at the end.
  cudaEvent_t fork = nullptr, join = nullptr;
  CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(1)));
  CAPTURE_CUDA_OK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(0)));
  CAPTURE_CUDA_OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CAPTURE_CUDA_OK(cudaStreamBeginCapture(stream_[0], cudaStreamCaptureModeThreadLocal));
  if (devices_ == 2) {
    CAPTURE_CUDA_OK(cudaEventRecord(fork, stream_[0]));
    CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(1)));
    CAPTURE_CUDA_OK(cudaStreamWaitEvent(stream_[1], fork));
  }
  const Status first = allreduce(a_, b_, n);
  const Status second = allreduce(b_, c_, n);
  if (devices_ == 2) {
    CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(1)));
    CAPTURE_CUDA_OK(cudaEventRecord(join, stream_[1]));
    CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(0)));
    CAPTURE_CUDA_OK(cudaStreamWaitEvent(stream_[0], join));
  }
  CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(0)));
  cudaGraph_t graph = nullptr;
  CAPTURE_CUDA_OK(cudaStreamEndCapture(stream_[0], &graph));
  ASSERT_TRUE(first.ok()) << first.message();
  ASSERT_TRUE(second.ok()) << second.message();
  std::size_t nodes = 0;
  CAPTURE_CUDA_OK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EXPECT_GE(nodes, static_cast<std::size_t>(2 * devices_)) << "a kernel per call and GPU";
  cudaGraphExec_t exec = nullptr;
  CAPTURE_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));

  for (int round = 1; round <= 3; ++round) {
    fill(round);
    CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(0)));
    CAPTURE_CUDA_OK(cudaGraphLaunch(exec, stream_[0]));
    synchronize();
    expect(b_, round, 1, "replay " + std::to_string(round) + ", first allreduce");
    expect(c_, round, 2, "replay " + std::to_string(round) + ", second allreduce");
    // An eager call between replays: the same kernel's launch counter moves on from the replay's.
    ASSERT_TRUE(allreduce(c_, b_, n).ok());
    synchronize();
    expect(b_, round, 4, "eager call after replay " + std::to_string(round));
  }
  // Several replays queued back to back, then one check.
  fill(4);
  CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(0)));
  for (int k = 0; k < 5; ++k) CAPTURE_CUDA_OK(cudaGraphLaunch(exec, stream_[0]));
  synchronize();
  expect(c_, 4, 2, "the last of five replays in a row");

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(fork);
  cudaEventDestroy(join);
}

// A size whose kernel was never loaded: refused with what to do, before anything is queued; the capture still ends.
TEST_P(GraphCaptureOnGpu, AnUnloadedKernelIsRefusedAndTheCaptureSurvives) {
  if (devices_ == 2) {
    CAPTURE_CUDA_OK(cudaStreamSynchronize(stream_[1]));
  }
  CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(0)));
  CAPTURE_CUDA_OK(cudaStreamBeginCapture(stream_[0], cudaStreamCaptureModeThreadLocal));
  cudaEvent_t fork = nullptr;
  if (devices_ == 2) {
    CAPTURE_CUDA_OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CAPTURE_CUDA_OK(cudaEventRecord(fork, stream_[0]));
    CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(1)));
    CAPTURE_CUDA_OK(cudaStreamWaitEvent(stream_[1], fork));
  }
  const Status s = allreduce(a_, b_, GetParam().count);
  if (devices_ == 2) {  // GPU 1's stream rejoins (nothing was queued on it but the wait)
    cudaEvent_t join = nullptr;
    CAPTURE_CUDA_OK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    CAPTURE_CUDA_OK(cudaEventRecord(join, stream_[1]));
    CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(0)));
    CAPTURE_CUDA_OK(cudaStreamWaitEvent(stream_[0], join));
    cudaEventDestroy(join);
  }
  CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(0)));
  cudaGraph_t graph = nullptr;
  CAPTURE_CUDA_OK(cudaStreamEndCapture(stream_[0], &graph)) << "the refused call broke the capture";
  EXPECT_EQ(s.code(), StatusCode::unsupported) << s.message();
  EXPECT_NE(s.message().find("Communicator::prepare"), std::string::npos) << s.message();
  std::size_t nodes = 0;
  CAPTURE_CUDA_OK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EXPECT_LE(nodes, 2u) << "no kernel was queued (only the fork and join)";
  cudaGraphDestroy(graph);
  if (fork) cudaEventDestroy(fork);

  // Communicator::prepare(call) loads it without running anything; then the same capture works and its replay is right.
  std::unique_ptr<CapturedCalls> captured;
  ASSERT_NO_FATAL_FAILURE(prepare_and_capture(ReduceOp::sum, &captured));
  fill(5);
  // A replay is ordered like a call on every stream: it waits for work still queued on GPU 1's (here a poison of
  // the output it writes), and later work there waits for it (synchronising GPU 1's stream covers the replay).
  CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(1)));
  CAPTURE_CUDA_OK(cudaMemsetAsync(b_[1], 0xff, GetParam().count * 4, stream_[1]));
  ASSERT_TRUE(captured->replay().ok());
  CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(1)));
  CAPTURE_CUDA_OK(cudaStreamSynchronize(stream_[1]));
  CAPTURE_CUDA_OK(cudaSetDevice(comm_->device_of_rank(0)));
  CAPTURE_CUDA_OK(cudaStreamSynchronize(stream_[0]));
  expect(b_, 5, 1, "a call captured after Communicator::prepare, replayed behind queued work");
}

// An avg runs as a sum, then a division of each result: prepare(call) of an avg, nothing loaded before it, loads the
// sum's kernel and the division's, so its capture works and the replay leaves the average.
TEST_P(GraphCaptureOnGpu, PrepareOfAnAvgLoadsWhatItsCaptureRuns) {
  std::unique_ptr<CapturedCalls> captured;
  ASSERT_NO_FATAL_FAILURE(prepare_and_capture(ReduceOp::avg, &captured));
  fill(6);
  ASSERT_TRUE(captured->replay().ok());
  synchronize();
  expect(b_, 6, 0.5f, "an avg captured after Communicator::prepare, replayed");
}

// Low latency up to 256 KiB, direct up to 32 MiB read per rank, trees beyond (a captured call never takes the copy
// engines or the host path); LL128 where its limit is raised to 8 MiB.
INSTANTIATE_TEST_SUITE_P(Protocols, GraphCaptureOnGpu,
                         ::testing::Values(CaptureCase{"low_latency", 1000}, CaptureCase{"ll128", (1 << 20) + 3, 8 << 20},
                                           CaptureCase{"direct", (1 << 20) + 3, 0}, CaptureCase{"trees", 16 << 20}),
                         [](const ::testing::TestParamInfo<CaptureCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace canopy
