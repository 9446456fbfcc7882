// The mistakes users make when calling a collective, and the exact message each gets (check_call in
// runtime/call/collective_call.hpp). Pointers and streams are described by a table instead of the CUDA runtime, so
// every rule runs on any CPU; tests/gpu/communicator_errors_gpu_test.cpp makes the same mistakes on real GPUs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include "dsl/algorithms/shipped_algorithms.hpp"
#include "runtime/call/collective_call.hpp"

namespace canopy {
namespace {

// Fake device memory: 1 MiB allocations at 0x10000000 (GPU 0), 0x20000000 (GPU 1), ...
const void* dev(int gpu, std::uintptr_t offset = 0) {
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(gpu + 1) * 0x10000000 + offset);
}
void* devw(int gpu, std::uintptr_t offset = 0) { return const_cast<void*>(dev(gpu, offset)); }
cudaStream_t stream(int id) { return reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(0x1000 + id)); }

CallOracle fake_oracle() {
  CallOracle o;
  o.pointer = [](const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    PointerFacts f;
    if (a >= 0x10000000 && a < 0x90000000) {
      f.kind = MemoryKind::device;
      f.device = static_cast<int>(a / 0x10000000) - 1;
      f.allocation = AllocationRange{a / 0x10000000 * 0x10000000, 1 << 20};
    } else if (a >= 0xA0000000 && a < 0xB0000000) {
      f.kind = MemoryKind::host;
    }
    return f;
  };
  // stream(k) lives on GPU k % 8; anything else is not a stream.
  o.stream = [](cudaStream_t s) -> std::optional<StreamFacts> {
    const auto a = reinterpret_cast<std::uintptr_t>(s);
    if (a >= 0x1000 && a < 0x1100) return StreamFacts{static_cast<int>(a - 0x1000) % 8, a};
    return std::nullopt;
  };
  // stream(49) (on GPU 1) is capturing a CUDA graph.
  o.stream_capturing = [](cudaStream_t s) { return s == stream(49); };
  return o;
}

struct Call {
  std::vector<const void*> send;
  std::vector<void*> recv;
  std::vector<cudaStream_t> streams;
  CollectiveCall call;
};

// A valid 2-rank call of `c`, ranks on GPUs 0 and 1, out of place, 1000 f32 elements.
Call valid(Collective c) {
  Call v;
  v.send = {dev(0), dev(1)};
  v.recv = {devw(0, 0x80000), devw(1, 0x80000)};
  v.streams = {stream(0), stream(1)};
  v.call.collective = c;
  v.call.count = 1000;
  return v;
}

Status check(Call& v, const std::vector<int>& devices = {0, 1}) {
  v.call.send = v.send;
  v.call.recv = v.recv;
  v.call.streams = v.streams;
  return check_call(v.call, devices, fake_oracle());
}

TEST(CollectiveCallErrors, ValidCallsPass) {
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                       Collective::reducescatter}) {
    Call v = valid(c);
    EXPECT_TRUE(check(v).ok()) << check(v).message();
  }
}

TEST(CollectiveCallErrors, InPlaceLayoutsPass) {
  Call a = valid(Collective::allreduce);
  a.send = {a.recv[0], a.recv[1]};
  EXPECT_TRUE(check(a).ok()) << check(a).message();
  Call g = valid(Collective::allgather);  // send = recv + rank x count
  g.send = {dev(0, 0x80000), dev(1, 0x80000 + 4000)};
  EXPECT_TRUE(check(g).ok()) << check(g).message();
  Call rs = valid(Collective::reducescatter);  // recv = send + rank x count
  rs.recv = {devw(0), devw(1, 4000)};
  EXPECT_TRUE(check(rs).ok()) << check(rs).message();
}

// The driver is asked once per allocation a rank uses: a recv inside the send's allocation (in place, or both
// carved from one buffer) takes its facts, and its bounds are still checked against that allocation.
TEST(CollectiveCallErrors, OneAllocationIsAskedAboutOnce) {
  int queries = 0;
  CallOracle o = fake_oracle();
  const auto facts = o.pointer;
  o.pointer = [&](const void* p) {
    ++queries;
    return facts(p);
  };
  Call v = valid(Collective::allreduce);  // send and recv 512 KiB apart in one 1 MiB allocation per GPU
  v.call.send = v.send;
  v.call.recv = v.recv;
  v.call.streams = v.streams;
  ASSERT_TRUE(check_call(v.call, {0, 1}, o).ok());
  EXPECT_EQ(queries, 2);
  v.recv[1] = devw(5);  // another allocation (on GPU 5, so the call is refused after asking)
  v.call.recv = v.recv;
  queries = 0;
  EXPECT_EQ(check_call(v.call, {0, 1}, o).message(),
            "allreduce: recv[1] (0x60000000) is on GPU 5, but rank 1 runs on GPU 1: allocate it on GPU 1");
  EXPECT_EQ(queries, 3);                // rank 0 once, rank 1 twice
  v.recv[1] = devw(1, 0x100000 - 100);  // the send's allocation, 100 bytes before its end
  v.call.recv = v.recv;
  EXPECT_EQ(check_call(v.call, {0, 1}, o).message(),
            "allreduce: recv[1] (0x200fff9c) needs 4000 bytes (1000 x f32 elements) but its allocation ends 100 bytes "
            "after it: pass a smaller count or a larger buffer");
}

TEST(CollectiveCallErrors, CountZeroIsANoOpEvenWithNullBuffers) {
  Call v = valid(Collective::allreduce);
  v.call.count = 0;
  v.send = {nullptr, nullptr};
  v.recv = {nullptr, nullptr};
  EXPECT_TRUE(check(v).ok());
}

TEST(CollectiveCallErrors, WrongNumberOfBuffers) {
  Call v = valid(Collective::allreduce);
  v.recv.pop_back();
  EXPECT_EQ(check(v).message(), "allreduce: got 2 send buffers, 1 receive buffers and 2 streams for 2 ranks: pass one "
                                "of each per rank, in rank order");
  EXPECT_EQ(check(v).code(), StatusCode::invalid_argument);
}

TEST(CollectiveCallErrors, NullBuffer) {
  Call v = valid(Collective::allreduce);
  v.recv[1] = nullptr;
  EXPECT_EQ(check(v).message(), "allreduce: recv[1] is null; rank 1 needs 4000 bytes there");
}

TEST(CollectiveCallErrors, HostMemory) {
  Call v = valid(Collective::allreduce);
  v.send[0] = reinterpret_cast<const void*>(0x5000);
  EXPECT_EQ(check(v).message(), "allreduce: send[0] (0x5000) is host memory CUDA does not know, not device memory: "
                                "allocate it with cudaMalloc on GPU 0");
  v.send[0] = reinterpret_cast<const void*>(0xA0000000);
  EXPECT_EQ(check(v).message(), "allreduce: send[0] (0xa0000000) is pinned host memory, not device memory: allocate "
                                "it with cudaMalloc on GPU 0");
}

TEST(CollectiveCallErrors, WrongDevice) {
  Call v = valid(Collective::allreduce);
  v.recv[1] = devw(0, 0x40000);
  EXPECT_EQ(check(v).message(), "allreduce: recv[1] (0x10040000) is on GPU 0, but rank 1 runs on GPU 1: allocate it "
                                "on GPU 1");
}

TEST(CollectiveCallErrors, BufferTooSmallForCount) {
  Call v = valid(Collective::allgather);
  v.recv[0] = devw(0, (1 << 20) - 4000);  // room for 1000 elements; allgather of 2 ranks needs 2000
  EXPECT_EQ(check(v).message(), "allgather: recv[0] (0x100ff060) needs 8000 bytes (2000 x f32 elements) but its "
                                "allocation ends 4000 bytes after it: pass a smaller count or a larger buffer");
}

TEST(CollectiveCallErrors, MisalignedPointer) {
  Call v = valid(Collective::allreduce);
  v.call.dtype = DataType::f64;
  v.send[1] = dev(1, 4);
  EXPECT_EQ(check(v).message(), "allreduce: send[1] (0x20000004) is not aligned to f64's 8 bytes");
}

TEST(CollectiveCallErrors, CountTooLarge) {
  Call v = valid(Collective::allgather);
  v.call.count = std::uint64_t{1} << 40;
  EXPECT_EQ(check(v).message(), "allgather: count 1099511627776 is too large for 2 ranks of f32: at most 137438953472 "
                                "elements");
  v.call.count = ~std::uint64_t{0};  // would overflow count x ranks x 4 bytes
  EXPECT_FALSE(check(v).ok());
}

TEST(CollectiveCallErrors, RootOutOfRange) {
  Call v = valid(Collective::broadcast);
  v.call.root = 2;
  EXPECT_EQ(check(v).message(), "broadcast: root 2 is not a rank: use 0 to 1");
  v.call.root = -1;
  EXPECT_EQ(check(v).message(), "broadcast: root -1 is not a rank: use 0 to 1");
}

TEST(CollectiveCallErrors, UnsupportedDtypeAndOp) {
  Call v = valid(Collective::allreduce);
  v.call.dtype = static_cast<DataType>(42);
  EXPECT_EQ(check(v).code(), StatusCode::unsupported);
  EXPECT_EQ(check(v).message(),
            "allreduce: dtype 42 is not supported; use f32, f16, bf16, f64, i32, i64, u8, i8, u32, u64, f8e4m3 or f8e5m2");
  v.call.dtype = DataType::f32;
  v.call.op = ReduceOp::avg;  // NCCL's ncclAvg: the runtime's division after a sum
  EXPECT_TRUE(check(v).ok()) << check(v).message();
  v.call.op = static_cast<ReduceOp>(5);  // NCCL's ncclMaxRedOp and beyond (premul-sum ops are not Canopy's)
  EXPECT_EQ(check(v).message(), "allreduce: reduction operator 5 is not supported; use sum, prod, min, max or avg");
}

TEST(CollectiveCallErrors, OverlapWithoutBeingInPlace) {
  Call v = valid(Collective::allreduce);
  v.recv[0] = devw(0, 400);  // inside send[0]
  EXPECT_EQ(check(v).message(), "allreduce: send[0] and recv[0] overlap without being in place (send = recv): use "
                                "separate buffers or exactly that layout");
  Call g = valid(Collective::allgather);
  g.send[1] = dev(1, 0x80000);  // in place would be recv + 1 x count
  EXPECT_EQ(check(g).message(), "allgather: send[1] and recv[1] overlap without being in place (send = recv + rank x "
                                "count elements): use separate buffers or exactly that layout");
}

TEST(CollectiveCallErrors, VirtualRanksMustNotShareBuffers) {
  Call v = valid(Collective::allreduce);  // both ranks on GPU 0
  v.send = {dev(0), dev(0, 0x10000)};
  v.recv = {devw(0, 0x80000), devw(0, 0x80000 + 2000)};
  v.streams = {stream(0), stream(0)};
  EXPECT_EQ(check(v, {0, 0}).message(), "allreduce: recv[0] and recv[1] overlap: ranks must not share buffers they "
                                        "write");
}

TEST(CollectiveCallErrors, StreamOnAnotherGpu) {
  Call v = valid(Collective::allreduce);
  v.streams[1] = stream(0);
  EXPECT_EQ(check(v).message(), "allreduce: streams[1] belongs to GPU 0, but rank 1 runs on GPU 1: create it on GPU 1");
}

// A call's kernels on every GPU wait for each other: capturing some of its streams but not the others would run half
// of it now and the rest at each replay, so that is refused, not left to hang.
TEST(CollectiveCallErrors, CapturingSomeStreamsIsRefused) {
  Call v = valid(Collective::allreduce);
  v.streams[1] = stream(49);
  const Status s = check(v);
  EXPECT_EQ(s.code(), StatusCode::unsupported);
  EXPECT_EQ(s.message(), fmt::format("allreduce: streams[1] ({}) is capturing a CUDA graph but streams[0] ({}) is not: "
                                     "the kernels of one call wait for each other on every GPU, so capture every "
                                     "rank's stream (one capture that forks to each GPU's stream, or one per GPU, "
                                     "replayed together) or none",
                                     static_cast<const void*>(stream(49)), static_cast<const void*>(stream(0))));
}

// Every stream capturing: accepted and reported, and no capturing stream is asked for its device
// (cuStreamGetDevice invalidates a capture).
TEST(CollectiveCallErrors, CapturingEveryStreamIsAcceptedWithoutDeviceQueries) {
  Call v = valid(Collective::allreduce);
  CallOracle o = fake_oracle();
  o.stream_capturing = [](cudaStream_t) { return true; };
  int device_queries = 0;
  o.stream = [&](cudaStream_t) -> std::optional<StreamFacts> {
    ++device_queries;
    return std::nullopt;
  };
  v.call.send = v.send;
  v.call.recv = v.recv;
  v.call.streams = v.streams;
  bool capturing = false;
  std::vector<unsigned long long> ids(2, 99);
  const Status s = check_call(v.call, {0, 1}, o, &capturing, ids);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(capturing);
  EXPECT_EQ(device_queries, 0);
  EXPECT_EQ(ids, (std::vector<unsigned long long>{0, 0}));  // nothing asked, nothing reported
  // And a call outside capture says so.
  bool eager = true;
  ASSERT_TRUE(check_call(v.call, {0, 1}, fake_oracle(), &eager).ok());
  EXPECT_FALSE(eager);
}

// Ranks of one GPU share its stream: the driver is asked about each stream once per call, not once per rank.
TEST(CollectiveCallErrors, ASharedStreamIsAskedAboutOnce) {
  CallOracle o = fake_oracle();
  int device_queries = 0, capture_queries = 0;
  const auto device = o.stream;
  o.stream = [&](cudaStream_t st) {
    ++device_queries;
    return device(st);
  };
  o.stream_capturing = [&](cudaStream_t) {
    ++capture_queries;
    return false;
  };
  const std::vector<const void*> send{dev(0), dev(0, 0x1000), dev(1), dev(1, 0x1000)};
  const std::vector<void*> recv{devw(0, 0x80000), devw(0, 0x90000), devw(1, 0x80000), devw(1, 0x90000)};
  const std::vector<cudaStream_t> streams{stream(0), stream(0), stream(1), stream(1)};
  CollectiveCall call;
  call.send = send;
  call.recv = recv;
  call.streams = streams;
  call.count = 100;
  std::vector<unsigned long long> ids(4, 99);
  const Status s = check_call(call, {0, 0, 1, 1}, o, nullptr, ids);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(device_queries, 2);  // one per stream, not one per rank
  EXPECT_EQ(capture_queries, 2);
  // Each stream's ID, at the first rank that uses it (what the launch on that GPU reuses), 0 elsewhere.
  const auto id = [](cudaStream_t st) { return static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(st)); };
  EXPECT_EQ(ids, (std::vector<unsigned long long>{id(stream(0)), 0, id(stream(1)), 0}));
}

TEST(CollectiveCallErrors, NotAStream) {
  Call v = valid(Collective::allreduce);
  v.streams[0] = reinterpret_cast<cudaStream_t>(0x77);
  EXPECT_EQ(check(v).message(), "allreduce: streams[0] (0x77) is not a valid CUDA stream");
}

TEST(CollectiveCallErrors, RanksOfOneGpuNeedOneStream) {
  Call v = valid(Collective::allreduce);
  v.send = {dev(0), dev(0, 0x10000)};
  v.recv = {devw(0, 0x80000), devw(0, 0xC0000)};
  v.streams = {stream(0), stream(8)};  // both on GPU 0, different streams
  EXPECT_EQ(check(v, {0, 0}).message(), "allreduce: ranks 0 and 1 both run on GPU 0 (one launch) but were given "
                                        "different streams (0x1000 and 0x1008): give them the same stream");
}

TEST(CollectiveCallErrors, DefaultStreamIsAcceptedOnEveryGpu) {
  Call v = valid(Collective::allreduce);
  v.streams = {nullptr, nullptr};
  EXPECT_TRUE(check(v).ok());
}

TEST(CollectiveCallErrors, UnusedBuffersMayBeNull) {
  Call b = valid(Collective::broadcast);  // non-root send is not read
  b.send[1] = nullptr;
  EXPECT_TRUE(check(b).ok()) << check(b).message();
  Call r = valid(Collective::reduce);  // non-root recv is not written
  r.recv[1] = nullptr;
  EXPECT_TRUE(check(r).ok()) << check(r).message();
}

// A program's call (Communicator::run_program): buffers sized by its chunks, counts a multiple of them, its own
// rank count, out of place only.
TEST(CollectiveCallErrors, ProgramCalls) {
  const algo::Program ring = algo::ring_allreduce(2);        // 2 chunks in, 2 out
  const algo::Program gather = algo::allpairs_allgather(2);  // 1 chunk in, 2 out
  Call v = valid(Collective::broadcast);                     // `collective` and `root` do not matter for a program
  v.call.program = &ring;
  v.call.root = 7;
  EXPECT_TRUE(check(v).ok()) << check(v).message();
  v.call.op = ReduceOp::avg;
  EXPECT_EQ(check(v).message(),
            "algorithm ring-allreduce: avg is for the five collectives (the sum divided by the ranks); a program's "
            "outputs combine a number of inputs of its own: run it with sum and divide");
  v.call.op = ReduceOp::sum;
  v.call.count = 1001;
  EXPECT_EQ(check(v).message(),
            "algorithm ring-allreduce: count 1001 is not a multiple of the program's 2 chunks (each chunk is count / "
            "2 elements): round it to 1000 or 1002");
  v.call.count = 1000;
  v.recv[1] = const_cast<void*>(dev(1, 0x800));  // overlaps its send buffer (4000 bytes from 0)
  EXPECT_EQ(check(v).message(),
            "algorithm ring-allreduce: send[1] and recv[1] overlap: this algorithm program runs out of place (its "
            "statements read inputs after writing outputs; MSCCL-IR programs declared inplace=\"1\" run in place); "
            "use separate buffers");
  v.recv[1] = devw(1, 0);  // exactly in place is refused too
  EXPECT_FALSE(check(v).ok());
  // An in-place program (as imported from MSCCL-IR with inplace="1") takes exactly NCCL's in-place layout.
  algo::Program in_place_ring = ring;
  in_place_ring.set_runs_in_place(true);
  v.call.program = &in_place_ring;
  EXPECT_TRUE(check(v).ok()) << check(v).message();
  v.recv[1] = const_cast<void*>(dev(1, 0x800));
  EXPECT_EQ(check(v).message(),
            "algorithm ring-allreduce: send[1] and recv[1] overlap: this in-place program takes NCCL's in-place "
            "layout only (allgather: send = recv + rank x count; reduce-scatter: recv = send + rank x count; else "
            "send = recv), not another overlap; use separate buffers");
  v.call.program = &ring;
  v = valid(Collective::allreduce);
  v.call.program = &gather;
  v.recv[0] = devw(0, (1 << 20) - 6000);  // room for 1500 elements; the output needs 2 x 1000
  EXPECT_NE(check(v).message().find("recv[0]"), std::string::npos) << check(v).message();
  v = valid(Collective::allreduce);
  const algo::Program four = algo::ring_allreduce(4);
  v.call.program = &four;
  EXPECT_EQ(check(v).message(),
            "algorithm ring-allreduce: the program is written for 4 ranks but the communicator has 2: build it for 2");
}

// CANOPY_CHECK_POINTERS=0: the oracle has no `pointer`, so memory kind, GPU and allocation bounds go unchecked;
// what needs no driver query (null, alignment, overlaps) is still refused with the same messages.
Status check_without_pointer_queries(Call& v, const std::vector<int>& devices = {0, 1}) {
  v.call.send = v.send;
  v.call.recv = v.recv;
  v.call.streams = v.streams;
  CallOracle o = fake_oracle();
  o.pointer = nullptr;
  return check_call(v.call, devices, o);
}

TEST(CollectiveCallErrors, WithoutPointerQueriesHostAndForeignMemoryPass) {
  Call v = valid(Collective::allreduce);
  v.send[0] = reinterpret_cast<const void*>(0x5000);  // host memory CUDA does not know, to the oracle
  ASSERT_FALSE(check(v).ok());                        // refused when the oracle is asked
  EXPECT_TRUE(check_without_pointer_queries(v).ok()) << check_without_pointer_queries(v).message();
  v.send[0] = reinterpret_cast<const void*>(0xA0000000);  // pinned host memory
  EXPECT_TRUE(check_without_pointer_queries(v).ok()) << check_without_pointer_queries(v).message();
  v = valid(Collective::allreduce);
  v.recv[1] = devw(0, 0x40000);  // on GPU 0 for rank 1
  ASSERT_FALSE(check(v).ok());
  EXPECT_TRUE(check_without_pointer_queries(v).ok()) << check_without_pointer_queries(v).message();
  Call g = valid(Collective::allgather);
  g.recv[0] = devw(0, (1 << 20) - 4000);  // past its allocation's end
  ASSERT_FALSE(check(g).ok());
  EXPECT_TRUE(check_without_pointer_queries(g).ok()) << check_without_pointer_queries(g).message();
}

TEST(CollectiveCallErrors, WithoutPointerQueriesNullMisalignedAndOverlapsAreRefused) {
  Call v = valid(Collective::allreduce);
  v.send[0] = reinterpret_cast<const void*>(0x5000);  // not asked about: the next problem is what is reported
  v.recv[1] = nullptr;
  EXPECT_EQ(check_without_pointer_queries(v).message(), "allreduce: recv[1] is null; rank 1 needs 4000 bytes there");
  EXPECT_EQ(check_without_pointer_queries(v).code(), StatusCode::invalid_argument);

  v = valid(Collective::allreduce);
  v.call.dtype = DataType::f64;
  v.send[1] = reinterpret_cast<const void*>(0x5004);  // host memory, misaligned for f64
  EXPECT_EQ(check_without_pointer_queries(v).message(), "allreduce: send[1] (0x5004) is not aligned to f64's 8 bytes");

  v = valid(Collective::allreduce);
  v.recv[0] = devw(0, 400);  // inside send[0]
  EXPECT_EQ(check_without_pointer_queries(v).message(),
            "allreduce: send[0] and recv[0] overlap without being in place (send = recv): use separate buffers or "
            "exactly that layout");

  v = valid(Collective::allreduce);  // both ranks on GPU 0, receive buffers overlapping
  v.send = {dev(0), dev(0, 0x10000)};
  v.recv = {devw(0, 0x80000), devw(0, 0x80000 + 2000)};
  v.streams = {stream(0), stream(0)};
  EXPECT_EQ(check_without_pointer_queries(v, {0, 0}).message(),
            "allreduce: recv[0] and recv[1] overlap: ranks must not share buffers they write");

  Call h = valid(Collective::allreduce);  // host buffers of two ranks overlapping: no GPU facts needed to see it
  h.send = {reinterpret_cast<const void*>(0x5000), reinterpret_cast<const void*>(0x9000)};
  h.recv = {reinterpret_cast<void*>(0x7000), reinterpret_cast<void*>(0x9000 + 400)};
  EXPECT_EQ(check_without_pointer_queries(h).message(),
            "allreduce: send[1] and recv[1] overlap without being in place (send = recv): use separate buffers or "
            "exactly that layout");
}

}  // namespace
}  // namespace canopy
