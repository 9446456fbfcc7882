// The datacheck's GPU reference (bench/harness/gpu_reference_check.hpp) against the host reference it replaces in the
// GPU tests (label gpu; SKIPPED without a GPU): every collective and a program, types and operators whose arithmetic
// differs (float sums and averages with their tolerance, fp8, wrapping integers, unsigned min), checked both ways on
// the same outputs: the same elements checked and none wrong; then elements corrupted (the top byte's bit 6 flipped:
// wrong in every type) and both ways count the same wrong elements, the GPU's examples naming the first one.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "bench/harness/collective_buffers.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/jit/jit.hpp"
#include "topology/shipped_topologies.hpp"

namespace canopy {
namespace {

struct Kind {
  DataType dtype;
  ReduceOp op;
};

constexpr Kind kKinds[] = {
    {DataType::f32, ReduceOp::sum},    {DataType::bf16, ReduceOp::avg}, {DataType::f8e4m3, ReduceOp::prod},
    {DataType::f16, ReduceOp::sum},    {DataType::f64, ReduceOp::prod}, {DataType::i64, ReduceOp::sum},
    {DataType::i8, ReduceOp::avg},     {DataType::u8, ReduceOp::min},   {DataType::u32, ReduceOp::max},
    {DataType::f8e5m2, ReduceOp::avg}, {DataType::u64, ReduceOp::prod}, {DataType::i32, ReduceOp::min},
};

// Flips bit 6 of the top byte of element `index` of `rank`'s output.
void corrupt(const CollectiveCall& call, const Communicator& comm, DataType dtype, int rank, std::uint64_t index) {
  const std::uint64_t size = static_cast<std::uint64_t>(size_of(dtype));
  unsigned char* p = static_cast<unsigned char*>(call.recv[rank]) + index * size + size - 1;
  unsigned char byte = 0;
  ASSERT_EQ(cudaSetDevice(comm.device_of_rank(rank)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&byte, p, 1, cudaMemcpyDeviceToHost), cudaSuccess);
  byte ^= 0x40;
  ASSERT_EQ(cudaMemcpy(p, &byte, 1, cudaMemcpyHostToDevice), cudaSuccess);
}

// What the program case runs: the kinds the shipped programs' GPU test runs (checked_program.hpp).
constexpr Kind kProgramKinds[] = {
    {DataType::f32, ReduceOp::sum}, {DataType::bf16, ReduceOp::sum},   {DataType::f32, ReduceOp::max},
    {DataType::i64, ReduceOp::prod}, {DataType::u8, ReduceOp::min},    {DataType::f8e4m3, ReduceOp::sum},
    {DataType::u32, ReduceOp::max},
};

// Checks `call`'s outputs on the GPU and on the host; both must count the same.
void expect_both_agree(CollectiveBuffers& buffers, const CheckSpec& s, const CollectiveCall& call,
                       const std::string& what, std::uint64_t expect_wrong, std::uint64_t first_wrong) {
  CheckResult on[2];
  for (int host = 0; host < 2; ++host) {
    buffers.check_on_host(host == 1);
    const Status st = buffers.check(s, call, &on[host]);
    ASSERT_TRUE(st.ok()) << what << (host ? " (host)" : " (GPU)") << ": " << st.message();
  }
  buffers.check_on_host(false);
  EXPECT_GT(on[0].checked, 0u) << what;
  EXPECT_EQ(on[0].checked, on[1].checked) << what;
  EXPECT_EQ(on[0].wrong, expect_wrong) << what << (on[0].examples.empty() ? "" : ": " + on[0].examples[0]);
  EXPECT_EQ(on[1].wrong, expect_wrong) << what << (on[1].examples.empty() ? "" : ": " + on[1].examples[0]);
  if (expect_wrong > 0) {
    ASSERT_FALSE(on[0].examples.empty()) << what;
    EXPECT_NE(on[0].examples[0].find(fmt::format("element {}:", first_wrong)), std::string::npos)
        << what << ": " << on[0].examples[0];
  }
}

// Runs `s` through `comm`, checks it both ways, corrupts two elements of every rank's output that the call defines
// and checks again.
void check_both_ways(Communicator& comm, CollectiveBuffers& buffers, const CheckSpec& s, const std::string& what) {
  CollectiveCall call;
  ASSERT_TRUE(buffers.set_up(s, false, &call).ok());
  const Status ran = comm.run(call);
  ASSERT_TRUE(ran.ok()) << what << ": " << ran.message();
  expect_both_agree(buffers, s, call, what, 0, 0);
  // Every rank's output corrupted alike, so that the ranks compared bit for bit with the reference rank still agree
  // and every wrong element is the reference's to find.
  std::uint64_t wrong = 0, first = 0;
  for (int r = 0; r < comm.ranks(); ++r) {
    const std::uint64_t n = output_elements(s, r);
    if (n < 2) continue;
    const std::uint64_t at[2] = {n / 3, n - 1};
    for (std::uint64_t j : at) corrupt(call, comm, s.dtype, r, j);
    // The same elements on every rank (the same n, or reduce's root alone): the wrong ones of the ranks checked.
    first = at[0];
    wrong = 2;
  }
  if (wrong == 0) return;
  // Ranks checked against the reference: reduce's root, every rank of a reducescatter or a program that is not the
  // same on every rank, one rank otherwise (the others compared with it, equal).
  std::uint64_t checked_ranks = 1;
  if (!same_output_on_every_rank(s) && (s.program || s.collective != Collective::reduce))
    checked_ranks = static_cast<std::uint64_t>(comm.ranks());
  expect_both_agree(buffers, s, call, what + " corrupted", wrong * checked_ranks, first);
}

TEST(ReferenceCheckOnGpu, AgreesWithTheHostAndCountsEveryCorruptedElement) {
  if (visible_gpu_count() == 0) GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none)";
  CommunicatorOptions o;
  o.topology = load_topology("h200x2");
  o.devices = {0};
  std::unique_ptr<Communicator> comm;
  ASSERT_TRUE(Communicator::create(o, &comm).ok());
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  Jit jit(DiskCache::from_environment());
  PatternKernels patterns(jit, fmt::format("sm_{}{}", prop.major, prop.minor));
  constexpr std::uint64_t kCount = 300007;  // several of the kernel's grid strides, not a round number
  std::unique_ptr<CollectiveBuffers> buffers;
  ASSERT_TRUE(CollectiveBuffers::create(*comm, kCount * 8 * 2, kCount * 8 * 2, patterns, &buffers).ok());
  int cases = 0;
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                       Collective::reducescatter})
    for (const Kind& k : kKinds) {
      if (!reduces(c) && k.op != ReduceOp::sum) continue;
      CheckSpec s{c, k.dtype, reduces(c) ? k.op : ReduceOp::sum, 1, 2, kCount, 0};
      s.seed = 0x5EED + static_cast<std::uint64_t>(cases);
      check_both_ways(*comm, *buffers, s, fmt::format("{} {} {}", to_string(c), to_string(k.dtype), to_string(s.op)));
      ++cases;
    }
  // A program (the shipped ring allreduce on two ranks): its outputs combine the pairs of its tables.
  auto ring = std::make_shared<ProgramOutputs>(algo::shipped_algorithm("ring-allreduce", 2));
  const std::uint64_t chunks = static_cast<std::uint64_t>(ring->program.chunks());
  for (const Kind& k : kProgramKinds) {
    CheckSpec s{Collective::allreduce, k.dtype, k.op, 0, 2, kCount / chunks * chunks, 0};
    s.seed = 0xA11 + static_cast<std::uint64_t>(cases);
    s.program = ring;
    check_both_ways(*comm, *buffers, s, fmt::format("ring_allreduce {} {}", to_string(k.dtype), to_string(k.op)));
    ++cases;
  }
  std::cout << fmt::format("[ runs ] {} calls checked on the GPU and on the host, then with two elements of every "
                           "rank corrupted\n",
                           cases);
}

}  // namespace
}  // namespace canopy
