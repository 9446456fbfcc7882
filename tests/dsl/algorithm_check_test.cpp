// The collective-algorithm checker: every shipped algorithm verifies; deliberately broken variants (a missing step, a
// double reduction, a wrong rank, a missing link, a race, a deadlock cycle, an uninitialised read, a written input, a
// wrong chunk) are each rejected with the right message naming the statement's line.
#include "dsl/algorithm_check.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <source_location>

#include "dsl/algorithms/shipped_algorithms.hpp"
#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "tests/test_util.hpp"

namespace canopy::algo {
namespace {

using ::testing::HasSubstr;

std::string messages(const Program& p, const Topology* t = nullptr) {
  std::string out;
  for (const Diagnostic& d : check_program(p, t)) out += to_string(d, p.name()) + "\n";
  return out;
}


TEST(AlgorithmCheck, ShippedAlgorithmsVerify) {
  for (const ShippedAlgorithm& a : shipped_algorithms())
    for (int n : {1, 2, 3, 4, 5, 8, 16})
      if (a.supports(n)) {
        EXPECT_EQ(messages(a.build(n)), "") << a.name << " on " << n << " ranks";
      }
  const Topology two_hosts = load_topology("dgx1-v100-x2");
  for (const char* name : {"hierarchical-allreduce", "two-step-alltoall", "alltonext"})
    EXPECT_EQ(messages(shipped_algorithm(name, 16), &two_hosts), "") << name << " on dgx1-v100-x2";
  const Topology hgx = load_topology("hgx-h200");
  for (const char* name : {"ring-allreduce", "allpairs-allgather", "halving-doubling-allreduce"})
    EXPECT_EQ(messages(shipped_algorithm(name, 8), &hgx), "") << name << " on hgx-h200";
}

TEST(AlgorithmCheck, RingNeedsItsLinks) {
  // dgx1-v100: gpu0 and gpu7 share no NVLink and sit under different CPUs, but PCIe switches and CPUs relay, so the
  // ring is linked; a topology without the ring's closing link is not.
  Topology line("line");
  auto g = line.gpus(4);
  for (int i = 0; i < 3; ++i) line.link(g[i], g[i + 1], nvlink4);
  const std::string m = messages(ring_allreduce(4), &line);
  EXPECT_THAT(m, HasSubstr("rank 3 (gpu3) has no link to rank 0 (gpu0) in topology line"));
  EXPECT_THAT(m, HasSubstr("ring-allreduce:")) << "names the statement's line";
  EXPECT_EQ(messages(ring_allreduce(8), &line),
            "ring-allreduce: error: the program has 8 ranks but topology line has 4 GPUs\n");
}

TEST(AlgorithmCheck, MissingStepLeavesAPartialSum) {
  Program p("missing-step", Collective::allreduce, 3, 1);
  Chunk acc = p.input(0, 0).copy(p.output(1, 0));
  acc = p.input(1, 0).reduce(acc);
  const int last = testing::source_line() + 1;
  acc = acc.copy(p.output(2, 0));  // forgot to add rank 2's input, and to send the result back
  const std::string m = messages(p);
  EXPECT_THAT(m, HasSubstr(fmt::format(
                     "missing-step:{}: error: rank 2 output[0] holds rank 0 input[0] + rank 1 input[0]", last)));
  EXPECT_THAT(m, HasSubstr("rank 2's input[0] is missing"));
  EXPECT_THAT(m, HasSubstr("rank 0 output[0] holds nothing"));
  EXPECT_THAT(m, HasSubstr("(nothing writes it)"));
}

TEST(AlgorithmCheck, DoubleReductionIsCounted) {
  Program p("double", Collective::reduce, 2, 1);
  Chunk acc = p.input(1, 0).copy(p.output(0, 0));
  acc = p.input(0, 0).reduce(acc);
  const int twice = testing::source_line() + 1;
  p.input(1, 0).reduce(acc);
  EXPECT_THAT(messages(p), HasSubstr(fmt::format("double:{}: error: rank 0 output[0] holds", twice)));
  EXPECT_THAT(messages(p), HasSubstr("rank 1's input[0] is reduced in 2 times"));
}

TEST(AlgorithmCheck, WrongRankMissesTheOutput) {
  Program p("wrong-rank", Collective::broadcast, 3, 1, /*root=*/0);
  p.input(0, 0).copy(p.output(0, 0));
  p.input(0, 0).copy(p.output(1, 0));
  p.input(0, 0).copy(p.output(1, 0));  // meant rank 2
  const std::string m = messages(p);
  EXPECT_THAT(m, HasSubstr("rank 2 output[0] holds nothing but broadcast promises rank 0 input[0]"));
  EXPECT_THAT(m, HasSubstr("rank 0's input[0] is missing"));
}

TEST(AlgorithmCheck, WrongChunkDoesNotBelong) {
  Program p("wrong-chunk", Collective::allgather, 2, 1);
  p.input(0, 0).copy(p.output(0, 0));
  p.input(0, 0).copy(p.output(1, 0));
  p.input(1, 0).copy(p.output(0, 1));
  const int bad = testing::source_line() + 1;
  p.input(0, 0).copy(p.output(1, 1));  // should be rank 1's chunk
  const std::string m = messages(p);
  EXPECT_THAT(m, HasSubstr(fmt::format("wrong-chunk:{}: error: rank 1 output[1] holds rank 0 input[0]", bad)));
  EXPECT_THAT(m, HasSubstr("rank 0's input[0] does not belong there"));
}

TEST(AlgorithmCheck, RaceBetweenChannels) {
  Program p("race", Collective::broadcast, 2, 1);
  p.input(0, 0).copy(p.output(0, 0));
  p.input(0, 0).copy(p.output(1, 0), Hints{0, {}});
  const int second = testing::source_line() + 1;
  p.input(0, 0).copy(p.output(1, 0), Hints{1, {}});
  EXPECT_THAT(messages(p), HasSubstr(fmt::format("race:{}: error: race on rank 1 output[0]", second)));
  EXPECT_THAT(messages(p), HasSubstr("both write it with nothing ordering them"));
  // On one channel the same two writes are ordered: no race (the result is still right).
  Program q("ordered", Collective::broadcast, 2, 1);
  q.input(0, 0).copy(q.output(0, 0));
  q.input(0, 0).copy(q.output(1, 0));
  q.input(0, 0).copy(q.output(1, 0));
  EXPECT_EQ(messages(q), "");
}

TEST(AlgorithmCheck, ReadWriteRaceThroughScratch) {
  Program p("war", Collective::broadcast, 2, 1);
  p.input(0, 0).copy(p.output(0, 0));
  Chunk s = p.input(0, 0).copy(p.scratch(1, 0), Hints{0, {}});
  s.copy(p.output(1, 0), Hints{0, {}});
  p.input(0, 0).copy(p.scratch(1, 0), Hints{1, {}});  // rewrites the scratch on another channel
  EXPECT_THAT(messages(p), HasSubstr("race on rank 1 scratch[0]"));
}

TEST(AlgorithmCheck, DeadlockCycleNamesItsStatements) {
  // Rank 1's channel is told to forward before it receives: the forward waits for data that waits for the forward.
  Program p("deadlock", Collective::broadcast, 3, 1);
  p.input(0, 0).copy(p.output(0, 0), Hints{0, 0});
  const int receive = testing::source_line() + 1;
  Chunk c = p.input(0, 0).copy(p.output(1, 0), Hints{0, 1});
  c.copy(p.output(2, 0), Hints{0, 0});
  const std::string m = messages(p);
  EXPECT_THAT(m, HasSubstr("deadlock: these statements wait on each other in a cycle"));
  EXPECT_THAT(m, HasSubstr(fmt::format("line {}", receive)));
}

TEST(AlgorithmCheck, UninitialisedReadAndWrittenInput) {
  Program p("uninit", Collective::allreduce, 2, 1);
  const int read = testing::source_line() + 1;
  p.output(1, 0).copy(p.output(0, 0));
  EXPECT_THAT(messages(p),
              HasSubstr(fmt::format("uninit:{}: error: copy rank 1 output[0] -> rank 0 output[0] reads rank 1 "
                                    "output[0], which nothing has written yet",
                                    read)));
  Program q("input", Collective::allreduce, 2, 1);
  q.input(0, 0).reduce(q.input(1, 0));
  EXPECT_THAT(messages(q), HasSubstr("writes an input buffer: inputs are the caller's"));
  Program r("reduce-empty", Collective::allreduce, 2, 1);
  r.input(0, 0).reduce(r.output(1, 0));
  EXPECT_THAT(messages(r), HasSubstr("reduces into rank 1 output[0], which nothing has written yet"));
}

TEST(AlgorithmCheck, HugeProgramsAreRefusedNotLeftToExhaustMemory) {
  Program p("huge", Collective::broadcast, 2, 1);
  for (int k = 0; k < 20001; ++k) p.input(0, 0).copy(p.output(k % 2, 0));
  EXPECT_THAT(messages(p), HasSubstr("20001 statements: the race check handles at most 20000"));
}

TEST(AlgorithmCheck, BadReferencesAreErrorsWhenWritten) {
  Program p("bounds", Collective::allgather, 2, 2);
  EXPECT_THROW(p.input(0, 2), Error);  // allgather inputs hold 2 chunks
  EXPECT_NO_THROW(p.output(1, 3));     // outputs hold 2 x 2
  EXPECT_THROW(p.output(2, 0), Error);
  try {
    p.input(0, 0, 2).copy(p.output(0, 0, 1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("counts must match"));
  }
  EXPECT_THROW(Program("x", Collective::reduce, 2, 1, 5), Error);
  EXPECT_THROW(shipped_algorithm("halving-doubling-allreduce", 6), Error);
  EXPECT_THROW(shipped_algorithm("tree-allreduce", 4), Error);
}

}  // namespace
}  // namespace canopy::algo
