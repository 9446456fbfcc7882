// Mismatched calls caught through the shared pages, without a GPU: CallSignature (what is compared, how it reads),
// the seqlocked ring (a torn or overwritten entry is never compared), and CallCounters::publish between "processes"
// (threads sharing their pages through real FdChannel endpoints): the same calls never mismatch, a count one above is
// found with both signatures in a message that reads the same whoever found it, and processes publishing at once
// (random interleavings from a printed seed) always find a planted mismatch and never a false one.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "dsl/algorithm.hpp"
#include "runtime/call/collective_call.hpp"
#include "runtime/processes/call_counters.hpp"
#include "runtime/comm/call_signature.hpp"
#include "runtime/processes/signature_ring.hpp"
#include "tests/runtime/threads_as_processes.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

std::vector<std::unique_ptr<CallCounters>> share_pages(int processes) {
  return share_among_threads<CallCounters>(processes, CallCounters::share);
}

CallSignature allreduce(std::uint64_t call, std::uint64_t count) {
  CollectiveCall c;
  c.collective = Collective::allreduce;
  c.count = count;
  c.dtype = DataType::f32;
  c.op = ReduceOp::sum;
  return call_signature(c, call, 0);
}

std::string process_name(int q) { return fmt::format("process {} (rank {})", q, q); }

TEST(CallSignature, ComparesOnlyWhatTheKernelsUse) {
  CollectiveCall c;
  c.collective = Collective::allreduce;
  c.count = 1028;
  c.root = 3;  // an allreduce has no root
  const CallSignature a = call_signature(c, 1, 0);
  c.root = 0;
  EXPECT_TRUE(a.same_call(call_signature(c, 1, 0)));
  EXPECT_TRUE(a.same_call(call_signature(c, 2, 0)));  // the number is the ring's business, not the comparison's
  c.count = 1029;
  EXPECT_FALSE(a.same_call(call_signature(c, 1, 0)));
  c.count = 1028;
  c.dtype = DataType::bf16;
  EXPECT_FALSE(a.same_call(call_signature(c, 1, 0)));
  c.dtype = DataType::f32;
  c.op = ReduceOp::max;
  EXPECT_FALSE(a.same_call(call_signature(c, 1, 0)));

  CollectiveCall b;  // a broadcast: its root counts, its operator does not
  b.collective = Collective::broadcast;
  b.count = 7;
  b.root = 1;
  b.op = ReduceOp::prod;
  const CallSignature root1 = call_signature(b, 5, 0);
  b.op = ReduceOp::min;
  EXPECT_TRUE(root1.same_call(call_signature(b, 5, 0)));
  b.root = 0;
  EXPECT_FALSE(root1.same_call(call_signature(b, 5, 0)));
  b.collective = Collective::allgather;
  b.root = 1;
  EXPECT_FALSE(root1.same_call(call_signature(b, 5, 0)));
}

TEST(CallSignature, ReadsAsTheRoundTripCheckPrintsIt) {
  EXPECT_EQ(describe_call(allreduce(1, 1028)), "call 1: allreduce count 1028 f32 sum");
  CollectiveCall b;
  b.collective = Collective::broadcast;
  b.count = 7;
  b.dtype = DataType::i32;
  b.root = 1;
  EXPECT_EQ(describe_call(call_signature(b, 2, 0)), "call 2: broadcast count 7 i32 root 1");
  b.collective = Collective::reduce;
  b.op = ReduceOp::max;
  EXPECT_EQ(describe_call(call_signature(b, 3, 0)), "call 3: reduce count 7 i32 max root 1");
  b.collective = Collective::reducescatter;
  EXPECT_EQ(describe_call(call_signature(b, 4, 0)), "call 4: reduce_scatter count 7 i32 max");
}

// A program's call: its identity (a hash of its text, never 0) and name, its operator where it reduces, never its
// call's collective or root.
TEST(CallSignature, AProgramIsKnownByItsIdentity) {
  const algo::Program ring("ring", Collective::allreduce, 2, 2);
  const algo::Program other("ring", Collective::allreduce, 2, 4);  // the same name, another program
  const algo::Program gather("gather", Collective::allgather, 2, 1);
  const std::uint64_t ring_id = program_identity(ring);
  EXPECT_NE(ring_id, 0u);
  EXPECT_EQ(ring_id, program_identity(algo::Program("ring", Collective::allreduce, 2, 2)));
  EXPECT_NE(ring_id, program_identity(other));
  CollectiveCall c;
  c.program = &ring;
  c.count = 64;
  c.op = ReduceOp::max;
  c.collective = Collective::broadcast;  // ignored for programs
  c.root = 1;
  const CallSignature s = call_signature(c, 9, ring_id);
  EXPECT_EQ(describe_call(s), fmt::format("call 9: algorithm ring count 64 f32 max (program {:016x})", ring_id));
  c.collective = Collective::allreduce;
  c.root = 0;
  EXPECT_TRUE(s.same_call(call_signature(c, 9, ring_id)));
  c.program = &other;
  EXPECT_FALSE(s.same_call(call_signature(c, 9, program_identity(other))));
  c.program = &gather;
  EXPECT_EQ(describe_call(call_signature(c, 9, 77)),
            "call 9: algorithm gather count 64 f32 (program 000000000000004d)");  // 77: a hash, in 16 hex digits
}

TEST(CallSignature, AMismatchNamesTheLowerProcessFirstWhoeverFoundIt) {
  const CallSignature mine = allreduce(1, 1029), theirs = allreduce(1, 1028);
  const std::string expected =
      "the processes made different calls: process 0 (rank 0) made \"call 1: allreduce count 1028 f32 sum\" but "
      "process 2 (rank 2) made \"call 1: allreduce count 1029 f32 sum\": every rank must make the same collective "
      "calls, with the same count, type, operator and root, in the same order";
  EXPECT_EQ(mismatched_calls_message(2, mine, 0, theirs, process_name), expected);
  EXPECT_EQ(mismatched_calls_message(0, theirs, 2, mine, process_name), expected);
}

// A ring in this process's memory, as a page holds it.
struct LocalRing {
  LocalRing() : bytes(::operator new[](kSignatureRingBytes, std::align_val_t(kSignatureEntryBytes))) {
    start_signature_ring(bytes);
  }
  ~LocalRing() { ::operator delete[](bytes, std::align_val_t(kSignatureEntryBytes)); }
  LocalRing(const LocalRing&) = delete;
  LocalRing& operator=(const LocalRing&) = delete;
  void* bytes;
};

TEST(SignatureRing, AnEntryReadsBackWholeUntilOverwritten) {
  LocalRing ring;
  const algo::Program p("a-program-name-longer-than-thirty-one-bytes", Collective::reduce, 2, 1);
  CollectiveCall c;
  c.program = &p;
  c.count = 12;
  c.op = ReduceOp::prod;
  c.dtype = DataType::u8;
  const CallSignature wrote = call_signature(c, 3, 0x1234);
  write_signature(ring.bytes, wrote);
  CallSignature read;
  ASSERT_EQ(read_signature(ring.bytes, 3, &read), SignatureRead::whole);
  EXPECT_TRUE(read.same_call(wrote));
  EXPECT_EQ(read.call, 3u);
  EXPECT_EQ(describe_call(read), describe_call(wrote));
  EXPECT_THAT(describe_call(read), HasSubstr("algorithm a-program-name-longer-than-thir count 12 u8 prod"));
  EXPECT_EQ(read_signature(ring.bytes, 4, &read), SignatureRead::absent);  // not written yet
  CollectiveCall r;
  r.collective = Collective::reduce;
  r.root = -7;  // a root's bits survive the packing, sign included
  r.count = 1ull << 40;
  const CallSignature negative_root = call_signature(r, 3 + kSignatureRingEntries, 0);
  write_signature(ring.bytes, negative_root);  // call 3's entry, K calls later
  EXPECT_EQ(read_signature(ring.bytes, 3, &read), SignatureRead::absent);
  ASSERT_EQ(read_signature(ring.bytes, 3 + kSignatureRingEntries, &read), SignatureRead::whole);
  EXPECT_TRUE(read.same_call(negative_root));
  EXPECT_EQ(read.root, -7);
}

// The seqlock's guard: the entry held call 5 when its reader began, and call 5 + K by the time its fields were read:
// not comparable (the fields may mix both calls).
TEST(SignatureRing, AnEntryOverwrittenWhileReadIsNotComparable) {
  LocalRing ring;
  write_signature(ring.bytes, allreduce(5, 100));
  struct Overwrite {
    void* ring;
    CallSignature later;
  } overwrite{ring.bytes, allreduce(5 + kSignatureRingEntries, 200)};
  const auto overwrite_it = [](void* context) {
    auto* o = static_cast<Overwrite*>(context);
    write_signature(o->ring, o->later);
  };
  CallSignature read;
  EXPECT_EQ(read_signature(ring.bytes, 5, &read, overwrite_it, &overwrite), SignatureRead::torn);
  EXPECT_EQ(read_signature(ring.bytes, 5 + kSignatureRingEntries, &read), SignatureRead::whole);
  EXPECT_EQ(read.count, 200u);
}

TEST(CallCounters, TheSameCallsOnEveryProcessNeverMismatch) {
  std::vector<std::unique_ptr<CallCounters>> c = share_pages(3);
  ASSERT_TRUE(c[0] && c[1] && c[2]);
  // More calls than the ring holds, each of another kind, every process in turn (each later one compares with all
  // the earlier ones' entries).
  for (std::uint64_t k = 1; k <= 3 * kSignatureRingEntries + 5; ++k) {
    CollectiveCall call;
    call.collective = static_cast<Collective>(k % 5);
    call.count = k * 7;
    call.root = static_cast<int>(k % 3);
    for (int p = 0; p < 3; ++p) {
      const std::optional<CallMismatch> m = c[p]->publish(call_signature(call, k, 0));
      ASSERT_FALSE(m) << "call " << k << ", process " << p << " against " << m->process;
      EXPECT_EQ(c[(p + 1) % 3]->of(p), k);  // the count beside it
    }
  }
}

TEST(CallCounters, ACountOneAboveIsFoundWithBothSignatures) {
  std::vector<std::unique_ptr<CallCounters>> c = share_pages(3);
  ASSERT_TRUE(c[0] && c[1] && c[2]);
  for (std::uint64_t k = 1; k <= 4; ++k)
    for (int p = 0; p < 3; ++p) ASSERT_FALSE(c[p]->publish(allreduce(k, 1028))) << k << " " << p;
  // Call 5: processes 0 and 1 alike, process 2 one element more; it publishes last, so it finds process 0's.
  EXPECT_FALSE(c[0]->publish(allreduce(5, 1028)));
  EXPECT_FALSE(c[1]->publish(allreduce(5, 1028)));
  const CallSignature odd = allreduce(5, 1029);
  const std::optional<CallMismatch> m = c[2]->publish(odd);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->process, 0);
  EXPECT_EQ(m->theirs.count, 1028u);
  EXPECT_EQ(m->theirs.call, 5u);
  EXPECT_THAT(mismatched_calls_message(2, odd, m->process, m->theirs, process_name),
              HasSubstr("process 0 (rank 0) made \"call 5: allreduce count 1028 f32 sum\" but process 2 (rank 2) "
                        "made \"call 5: allreduce count 1029 f32 sum\""));
  // The other way round (the odd process first): the first of the others to publish finds it, and says the same.
  EXPECT_FALSE(c[2]->publish(allreduce(6, 1029)));
  const std::optional<CallMismatch> seen = c[0]->publish(allreduce(6, 1028));
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->process, 2);
  EXPECT_EQ(mismatched_calls_message(0, allreduce(6, 1028), seen->process, seen->theirs, process_name),
            mismatched_calls_message(2, allreduce(6, 1029), 0, allreduce(6, 1028), process_name));
}

// A process K calls ahead has overwritten the entry of the call another now makes: that pair is not compared, so
// call K + 1's signature is never taken for call 1's.
TEST(CallCounters, AnEntryOverwrittenKCallsLaterIsNotCompared) {
  std::vector<std::unique_ptr<CallCounters>> c = share_pages(2);
  ASSERT_TRUE(c[0] && c[1]);
  for (std::uint64_t k = 1; k <= kSignatureRingEntries; ++k) ASSERT_FALSE(c[0]->publish(allreduce(k, 5)));
  ASSERT_FALSE(c[0]->publish(allreduce(kSignatureRingEntries + 1, 999)));  // over call 1's entry
  EXPECT_FALSE(c[1]->publish(allreduce(1, 5)));                             // not compared with 999
  for (std::uint64_t k = 2; k <= kSignatureRingEntries; ++k) ASSERT_FALSE(c[1]->publish(allreduce(k, 5))) << k;
  // Level again at call K + 1: compared, and different.
  const std::optional<CallMismatch> m = c[1]->publish(allreduce(kSignatureRingEntries + 1, 5));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->process, 0);
  EXPECT_EQ(m->theirs.count, 999u);
}

// Processes publishing at once: before each call every process waits (spinning, so they leave together) for all of
// them to arrive, then spins a random while (from the printed seed) and publishes, so their stores and loads race as
// they do when processes make a call at once. In a call with a planted mismatch (one process's count one above),
// every pair of that process and another has a side that finds it (the odd process reports the first other it
// reads that differs: a pair after that one counts as found), and nothing is found at any other call. Without the
// fence between the stores and the loads this failed in 10 runs of 10 on a 2-core VM; with it, in none of 30.
TEST(CallCounters, ProcessesPublishingAtOnceAlwaysFindAMismatchAndNeverAFalseOne) {
  for (const int processes : {2, 3}) {
    SCOPED_TRACE(fmt::format("{} processes", processes));
    std::vector<std::unique_ptr<CallCounters>> c = share_pages(processes);
    for (int p = 0; p < processes; ++p) ASSERT_TRUE(c[p]) << p;
    std::mt19937_64 rng = testing::seeded_rng("CallCounters.ProcessesPublishingAtOnce");
    constexpr int kCalls = 20000;
    std::vector<int> odd(kCalls + 1, -1);  // per call: the process whose count is one above, -1: none
    for (int k = 1; k <= kCalls; ++k)
      if (rng() % 2) odd[k] = static_cast<int>(rng() % processes);
    std::vector<std::uint64_t> seeds(processes);
    for (auto& s : seeds) s = rng();
    // found[k][p]: the process that p's call k found different (-1: none); wrong[p]: anything found but a planted one.
    std::vector<std::vector<int>> found(kCalls + 1, std::vector<int>(processes, -1));
    std::vector<int> wrong(processes, 0);
    std::atomic<int> arrived{0};
    std::vector<std::thread> threads;
    for (int p = 0; p < processes; ++p)
      threads.emplace_back([&, p] {
        std::mt19937_64 spins(seeds[p]);
        volatile int sink = 0;
        for (int k = 1; k <= kCalls; ++k) {
          arrived.fetch_add(1);
          for (int n = 0; arrived.load() < k * processes; ++n)
            if (n % 64 == 63) std::this_thread::yield();  // more processes than cores
          for (int s = static_cast<int>(spins() % 32); s > 0; --s) sink = sink + 1;
          const bool mine_odd = odd[k] == p;
          const std::optional<CallMismatch> m = c[p]->publish(allreduce(k, 4096 + (mine_odd ? 1 : 0)));
          if (!m) continue;
          const bool planted = odd[k] >= 0 && (mine_odd || m->process == odd[k]) &&
                               m->theirs.call == static_cast<std::uint64_t>(k) &&
                               m->theirs.count == 4096 + (m->process == odd[k] ? 1u : 0u);
          if (planted)
            found[k][p] = m->process;
          else
            ++wrong[p];
        }
      });
    for (std::thread& t : threads) t.join();
    for (int p = 0; p < processes; ++p) EXPECT_EQ(wrong[p], 0) << "process " << p << " found mismatches never made";
    int missed = 0, planted = 0;
    for (int k = 1; k <= kCalls; ++k) {
      if (odd[k] < 0) {
        for (int p = 0; p < processes; ++p) EXPECT_EQ(found[k][p], -1) << "call " << k;
        continue;
      }
      ++planted;
      for (int other = 0; other < processes; ++other) {
        if (other == odd[k]) continue;
        const int odd_found = found[k][odd[k]];
        if (found[k][other] != odd[k] && odd_found != other && !(odd_found >= 0 && odd_found < other)) ++missed;
      }
    }
    EXPECT_GT(planted, kCalls / 4);
    EXPECT_EQ(missed, 0) << "pairs of a planted mismatch that neither side found";
  }
}

}  // namespace
}  // namespace canopy
