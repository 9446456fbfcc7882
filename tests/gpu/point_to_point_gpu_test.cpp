// Communicator::send_recv on one process's virtual ranks (label gpu; SKIPPED without a GPU): 2, 3 and 4 ranks of
// hgx-h200 all on GPU 0, groups of ring, pairs, self-sends, two sends to one peer and all-to-all, for every type of
// {f32, bf16, f16, i64, u8} and counts {0, 1, 7, 1028, 65540}, posted in reverse order, with each rank on a stream of
// its own (the copies ordered by events) and with every rank on one shared stream; each group's receive buffers
// checked byte for byte (and the bytes past them untouched), then an allreduce on the shared stream checked too.
// Refusals come back as Status before anything moves.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "runtime/call/point_to_point.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "topology/shipped_topologies.hpp"

namespace canopy {
namespace {

constexpr std::uint64_t kGuard = 64;  // bytes past each receive that must stay untouched
constexpr unsigned char kUnwritten = 0xEE;
constexpr std::uint64_t kAllreduceCount = 1028;

// `ranks` virtual ranks of hgx-h200 (its GPUs 0 .. ranks - 1), all on GPU 0.
std::unique_ptr<Communicator> ranks_on_gpu0(int ranks) {
  CommunicatorOptions o;
  o.topology = load_topology("hgx-h200");
  for (int r = 0; r < ranks; ++r) o.gpus.push_back(std::to_string(r));
  o.devices = {0};
  std::unique_ptr<Communicator> comm;
  const Status s = Communicator::create(o, &comm);
  EXPECT_TRUE(s.ok()) << s.message();
  return comm;
}

// One message of a group: the k-th from sender to receiver.
struct Message {
  int sender = 0;
  int receiver = 0;
  int k = 0;
};

struct Pattern {
  const char* name;
  std::vector<Message> (*messages)(int ranks);
};

const Pattern kPatterns[] = {
    {"ring",
     [](int n) {
       std::vector<Message> m;
       for (int r = 0; r < n; ++r) m.push_back({r, (r + 1) % n, 0});
       return m;
     }},
    {"pairs",  // r with r ^ 1; an odd count's last rank sends to itself
     [](int n) {
       std::vector<Message> m;
       for (int r = 0; r < n; ++r) m.push_back({r, (r ^ 1) < n ? r ^ 1 : r, 0});
       return m;
     }},
    {"self",
     [](int n) {
       std::vector<Message> m;
       for (int r = 0; r < n; ++r) m.push_back({r, r, 0});
       return m;
     }},
    {"twice to one peer",
     [](int n) {
       std::vector<Message> m;
       for (int k = 0; k < 2; ++k)
         for (int r = 0; r < n; ++r) m.push_back({r, (r + n - 1) % n, k});
       return m;
     }},
    {"all to all",
     [](int n) {
       std::vector<Message> m;
       for (int s = 0; s < n; ++s)
         for (int r = 0; r < n; ++r) m.push_back({s, r, 0});
       return m;
     }},
};

unsigned char pattern_byte(const Message& m, std::uint64_t j) {
  return static_cast<unsigned char>(m.sender * 31 + m.receiver * 17 + m.k * 7 + j * 13 + 1);
}

// Device memory freed at scope end; the test asserts on the allocations.
struct DeviceBytes {
  void* p = nullptr;
  explicit DeviceBytes(std::uint64_t bytes) {
    if (cudaMalloc(&p, bytes) != cudaSuccess) p = nullptr;
  }
  ~DeviceBytes() { cudaFree(p); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
};

class PointToPointOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }

  // Per rank a stream of its own, and one stream every rank shares (the collectives').
  void make_streams(int ranks) {
    own_.resize(ranks);
    for (cudaStream_t& s : own_) ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&shared_, cudaStreamNonBlocking), cudaSuccess);
  }
  void drop_streams() {
    for (cudaStream_t s : own_) cudaStreamDestroy(s);
    if (shared_) cudaStreamDestroy(shared_);
    own_.clear();
    shared_ = nullptr;
  }
  void TearDown() override { drop_streams(); }

  // One group of `messages` of `count` elements of `dtype`, posted in reverse (receives first), each rank on its own
  // stream or all on the shared one; checks every receive and the bytes past it. `send` and `recv` hold a slot of
  // `slot` bytes per message.
  void check_group(Communicator& comm, const std::vector<Message>& messages, std::uint64_t count, DataType dtype,
                   bool own_streams, char* send, char* recv, std::uint64_t slot, const std::string& what) {
    const std::uint64_t bytes = count * static_cast<std::uint64_t>(size_of(dtype));
    std::vector<unsigned char> host(slot);
    for (std::size_t i = 0; i < messages.size(); ++i) {
      for (std::uint64_t j = 0; j < bytes; ++j) host[j] = pattern_byte(messages[i], j);
      ASSERT_EQ(cudaMemcpy(send + i * slot, host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    }
    ASSERT_EQ(cudaMemset(recv, kUnwritten, slot * messages.size()), cudaSuccess);
    // The streams are non-blocking: the legacy stream's copies and memset above must be done before they start.
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto stream = [&](int rank) { return own_streams ? own_[rank] : shared_; };
    std::vector<PointToPoint> ops;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const Message& m = messages[i];
      ops.push_back(send_op(m.sender, send + i * slot, count, dtype, m.receiver, stream(m.sender)));
      ops.push_back(recv_op(m.receiver, recv + i * slot, count, dtype, m.sender, stream(m.receiver)));
    }
    std::reverse(ops.begin(), ops.end());
    const Status s = comm.send_recv(ops);
    ASSERT_TRUE(s.ok()) << what << ": " << s.message();
    for (cudaStream_t st : own_) ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess) << what;
    ASSERT_EQ(cudaStreamSynchronize(shared_), cudaSuccess) << what;
    int wrong = 0;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      ASSERT_EQ(cudaMemcpy(host.data(), recv + i * slot, bytes + kGuard, cudaMemcpyDeviceToHost), cudaSuccess);
      for (std::uint64_t j = 0; j < bytes + kGuard; ++j) {
        const unsigned char want = j < bytes ? pattern_byte(messages[i], j) : kUnwritten;
        if (host[j] != want && wrong++ < 5)
          ADD_FAILURE() << fmt::format("{}: message {} (rank {}'s send {} to rank {}): byte {} is {:#x}, want {:#x}",
                                       what, i, messages[i].sender, messages[i].k, messages[i].receiver, j, host[j],
                                       want);
      }
    }
    EXPECT_EQ(wrong, 0) << what;
  }

  // An allreduce (sum of f32) on the shared stream, checked: rank r holds r + 1 + (j % 5) at element j.
  void check_allreduce(Communicator& comm, std::span<void* const> in, std::span<void* const> out,
                       const std::string& what) {
    const int n = comm.ranks();
    std::vector<float> host(kAllreduceCount);
    for (int r = 0; r < n; ++r) {
      for (std::uint64_t j = 0; j < kAllreduceCount; ++j) host[j] = static_cast<float>(r + 1 + j % 5);
      ASSERT_EQ(cudaMemcpy(in[r], host.data(), kAllreduceCount * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the inputs are in before the non-blocking stream reads them
    std::vector<const void*> send(in.begin(), in.end());
    const std::vector<cudaStream_t> streams(n, shared_);
    const Status s = comm.allreduce(send, out, kAllreduceCount, DataType::f32, ReduceOp::sum, streams);
    ASSERT_TRUE(s.ok()) << what << ": allreduce: " << s.message();
    ASSERT_EQ(cudaStreamSynchronize(shared_), cudaSuccess);
    int wrong = 0;
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(cudaMemcpy(host.data(), out[r], kAllreduceCount * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
      for (std::uint64_t j = 0; j < kAllreduceCount; ++j) {
        const float want = static_cast<float>(n * (n + 1) / 2 + n * static_cast<int>(j % 5));
        if (host[j] != want && wrong++ < 5)
          ADD_FAILURE() << fmt::format("{}: allreduce after: rank {} element {} is {}, want {}", what, r, j, host[j],
                                       want);
      }
    }
    EXPECT_EQ(wrong, 0) << what;
  }

  std::vector<cudaStream_t> own_;
  cudaStream_t shared_ = nullptr;
};

TEST_F(PointToPointOnGpu, EveryPatternTypeAndCountArrivesAndAnAllreduceAfterIsRight) {
  const DataType types[] = {DataType::f32, DataType::bf16, DataType::f16, DataType::i64, DataType::u8};
  const std::uint64_t counts[] = {0, 1, 7, 1028, 65540};
  const std::uint64_t slot = 65540 * 8 + kGuard;
  for (int n : {2, 3, 4}) {
    std::unique_ptr<Communicator> comm = ranks_on_gpu0(n);
    ASSERT_TRUE(comm);
    ASSERT_EQ(comm->ranks(), n);
    make_streams(n);
    const std::size_t most = static_cast<std::size_t>(n * n);  // all to all's messages, the most of any pattern
    DeviceBytes send(slot * most), recv(slot * most), reduce_in(kAllreduceCount * sizeof(float) * n),
        reduce_out(kAllreduceCount * sizeof(float) * n);
    ASSERT_TRUE(send.p && recv.p && reduce_in.p && reduce_out.p);
    std::vector<void*> in, out;
    for (int r = 0; r < n; ++r) {
      in.push_back(static_cast<char*>(reduce_in.p) + r * kAllreduceCount * sizeof(float));
      out.push_back(static_cast<char*>(reduce_out.p) + r * kAllreduceCount * sizeof(float));
    }
    int groups = 0;
    for (const Pattern& pattern : kPatterns)
      for (DataType t : types)
        for (std::uint64_t count : counts)
          for (bool own_streams : {true, false}) {
            const std::string what = fmt::format("{} ranks, {}, {} x {}, {}", n, pattern.name, count, to_string(t),
                                                 own_streams ? "a stream per rank" : "one shared stream");
            check_group(*comm, pattern.messages(n), count, t, own_streams, static_cast<char*>(send.p),
                        static_cast<char*>(recv.p), slot, what);
            check_allreduce(*comm, in, out, what);
            if (HasFatalFailure()) return;
            ++groups;
          }
    std::cout << fmt::format("[ runs ] point-to-point on {} virtual ranks of GPU 0: {} groups, each with an "
                             "allreduce after\n",
                             n, groups);
    drop_streams();
  }
}

TEST_F(PointToPointOnGpu, RefusesWhatItCannotMatchAndMovesARing) {
  std::unique_ptr<Communicator> comm = ranks_on_gpu0(2);
  ASSERT_TRUE(comm);
  make_streams(2);
  DeviceBytes send(2 * 1024), recv(2 * 1024);
  ASSERT_TRUE(send.p && recv.p);
  char* s = static_cast<char*>(send.p);
  char* r = static_cast<char*>(recv.p);
  // An unmatched send, and counts that differ: refused before anything moves.
  const PointToPoint unmatched[] = {send_op(0, s, 16, DataType::f32, 1, own_[0])};
  Status st = comm->send_recv(unmatched);
  EXPECT_EQ(st.code(), StatusCode::invalid_argument);
  EXPECT_NE(st.message().find("has no matching receive"), std::string::npos) << st.message();
  const PointToPoint differ[] = {send_op(0, s, 16, DataType::f32, 1, own_[0]),
                                 recv_op(1, r, 15, DataType::f32, 0, own_[1])};
  st = comm->send_recv(differ);
  EXPECT_EQ(st.code(), StatusCode::invalid_argument);
  EXPECT_NE(st.message().find("pass the same count and type on both sides"), std::string::npos) << st.message();
  EXPECT_TRUE(comm->send_recv({}).ok());
  DeviceBytes in(kAllreduceCount * sizeof(float) * 2), out(kAllreduceCount * sizeof(float) * 2);
  ASSERT_TRUE(in.p && out.p);
  void* const ins[] = {in.p, static_cast<char*>(in.p) + kAllreduceCount * sizeof(float)};
  void* const outs[] = {out.p, static_cast<char*>(out.p) + kAllreduceCount * sizeof(float)};
  check_group(*comm, kPatterns[0].messages(2), 64, DataType::f32, true, s, r, 1024, "2 ranks, ring");
  check_allreduce(*comm, ins, outs, "2 ranks, ring");
}

}  // namespace
}  // namespace canopy
