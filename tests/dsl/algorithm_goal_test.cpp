// Goals besides the planner's collectives: alltoall and custom post-conditions (and preconditions) are proven by the
// checker and a broken variant of each is rejected naming the chunk; output_contents and expected_output, which
// runtime correctness checks use, report the symbolic execution and the goal's promise.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <source_location>

#include "dsl/algorithm_check.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"
#include "core/error.hpp"
#include "tests/test_util.hpp"

namespace canopy::algo {
namespace {

using ::testing::HasSubstr;

std::string goal_messages(const Program& p) {
  std::string out;
  for (const Diagnostic& d : check_program(p)) out += to_string(d, p.name()) + "\n";
  return out;
}


// Rank r's output[i] holds rank r-1's input[i]; rank 0's output is free.
CustomGoal to_next() {
  return CustomGoal{.name = "to-next", .output = [](int rank, int index) -> std::optional<Contents> {
                      if (rank == 0) return std::nullopt;
                      return Contents{{{rank - 1, index}, 1}};
                    }};
}

TEST(AlgorithmGoal, AlltoallSizesAndPromise) {
  Program p("a2a", AllToAll{}, 3, 2);
  EXPECT_EQ(p.goal(), "alltoall");
  EXPECT_FALSE(p.reduces());
  EXPECT_FALSE(p.collective().has_value());
  EXPECT_EQ(p.buffer_chunks(Buffer::input), 6);
  EXPECT_EQ(p.buffer_chunks(Buffer::output), 6);
  // Output of rank 1 at q*C+c = 2*2+1 holds rank 2's input at r*C+c = 1*2+1.
  EXPECT_EQ(expected_output(p, 1, 5), (Contents{{{2, 3}, 1}}));
  EXPECT_EQ(expected_output(p, 0, 0), (Contents{{{0, 0}, 1}}));
}

TEST(AlgorithmGoal, DirectAlltoallVerifiesAndASwappedChunkIsNamed) {
  int bad = 0;
  auto direct = [&bad](const char* name, bool swap) {
    Program p(name, AllToAll{}, 3, 1);
    for (int r = 0; r < 3; ++r)
      for (int q = 0; q < 3; ++q) p.input(r, q).copy(p.output(q, r), Hints{q, {}});
    if (swap) {
      bad = testing::source_line() + 1;
      p.input(0, 2).copy(p.output(1, 0), Hints{1, {}});  // rank 0's chunk for rank 2, sent to rank 1
    }
    return p;
  };
  EXPECT_EQ(goal_messages(direct("a2a", false)), "");
  const std::string m = goal_messages(direct("a2a-swapped", true));
  EXPECT_THAT(m, HasSubstr(fmt::format("a2a-swapped:{}: error: rank 1 output[0] holds rank 0 input[2] but alltoall "
                                       "promises rank 0 input[1]: rank 0's input[1] is missing; rank 0's input[2] "
                                       "does not belong there",
                                       bad)));
}

TEST(AlgorithmGoal, CustomPostconditionVerifiesAndAWrongSourceIsNamed) {
  Program p("next", to_next(), 3, 2);
  EXPECT_EQ(p.goal(), "to-next");
  EXPECT_FALSE(p.reduces());
  EXPECT_EQ(p.buffer_chunks(Buffer::input), 2);
  EXPECT_FALSE(expected_output(p, 0, 1).has_value()) << "rank 0's output is free";
  p.input(0, 0, 2).copy(p.output(1, 0, 2));
  p.input(1, 0, 2).copy(p.output(2, 0, 2));
  EXPECT_EQ(goal_messages(p), "");

  Program q("next-broken", to_next(), 3, 1);
  q.input(0, 0).copy(q.output(1, 0));
  const int bad = testing::source_line() + 1;
  q.input(0, 0).copy(q.output(2, 0));  // meant rank 1's input
  EXPECT_THAT(goal_messages(q), HasSubstr(fmt::format("next-broken:{}: error: rank 2 output[0] holds rank 0 input[0] but "
                                                 "to-next promises rank 1 input[0]: rank 1's input[0] is missing",
                                                 bad)));
}

TEST(AlgorithmGoal, CustomSizesPreconditionAndReduction) {
  // A reducing gather onto rank 0 whose inputs hold 2 chunks and output 1, and where rank 2 brings nothing.
  CustomGoal sum{.name = "sum-first",
                 .output = [](int rank, int) -> std::optional<Contents> {
                   if (rank != 0) return std::nullopt;
                   return Contents{{{0, 0}, 1}, {{1, 0}, 1}};
                 },
                 .reduces = true,
                 .input_chunks = 2,
                 .output_chunks = 1,
                 .input =
                     [](int rank, int index) {
                       return rank == 2 ? Contents{} : Contents{{{rank, index}, 1}};
                     }};
  Program p("sum", sum, 3, 5);
  EXPECT_TRUE(p.reduces());
  EXPECT_EQ(p.buffer_chunks(Buffer::input), 2);
  EXPECT_EQ(p.buffer_chunks(Buffer::output), 1);
  EXPECT_EQ(input_contents(p, 2, 0), Contents{});
  p.input(0, 0).copy(p.output(0, 0));
  p.input(1, 0).reduce(p.output(0, 0));
  EXPECT_EQ(goal_messages(p), "");
  const int read = testing::source_line() + 1;
  p.input(2, 1).reduce(p.output(0, 0));
  EXPECT_THAT(goal_messages(p), HasSubstr(fmt::format("sum:{}: error: reduce rank 2 input[1] -> rank 0 output[0] reads "
                                                 "rank 2 input[1], which nothing has written yet",
                                                 read)));
}

TEST(AlgorithmGoal, CustomGoalMistakesAreErrors) {
  auto error = [](CustomGoal goal) {
    try {
      Program("p", std::move(goal), 2, 1);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error(CustomGoal{.name = "x"}),
              HasSubstr("custom goal 'x' has no post-condition: set CustomGoal::output"));
  CustomGoal unnamed = to_next();
  unnamed.name.clear();
  EXPECT_THAT(error(unnamed), HasSubstr("has no name: set CustomGoal::name"));
  CustomGoal negative = to_next();
  negative.output_chunks = -1;
  EXPECT_THAT(error(negative), HasSubstr("use >= 1, or 0 for the program's chunks"));
  Program p("p", AllToAll{}, 2, 1);
  EXPECT_THROW(expected_output(p, 2, 0), Error);
  EXPECT_THROW(expected_output(p, 0, 2), Error);
  EXPECT_THROW(input_contents(p, 0, -1), Error);
}

TEST(AlgorithmGoal, OutputContentsFollowProgramOrder) {
  const std::vector<std::vector<Contents>> ring = output_contents(ring_allreduce(2));
  ASSERT_EQ(ring.size(), 2u);
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 2; ++i) EXPECT_EQ(ring[r][i], (Contents{{{0, i}, 1}, {{1, i}, 1}})) << r << " " << i;

  Program p("partial", Collective::reduce, 2, 2);
  p.input(1, 0).copy(p.output(0, 0));
  p.input(0, 0).reduce(p.output(0, 0));
  p.input(0, 0).reduce(p.output(0, 0));  // twice: counted
  p.input(1, 1).copy(p.scratch(0, 0));
  const std::vector<std::vector<Contents>> got = output_contents(p);
  EXPECT_EQ(got[0][0], (Contents{{{0, 0}, 2}, {{1, 0}, 1}}));
  EXPECT_EQ(got[0][1], Contents{}) << "never written";
  EXPECT_EQ(got[1][0], Contents{});
  EXPECT_EQ(expected_output(p, 0, 1), (Contents{{{0, 1}, 1}, {{1, 1}, 1}}));
  EXPECT_FALSE(expected_output(p, 1, 0).has_value()) << "reduce leaves non-roots free";
}

TEST(AlgorithmGoal, ShippedGoalsMatchTheirPromises) {
  for (const char* name : {"two-step-alltoall", "alltonext"})
    for (int n : {2, 8}) {
      const Program p = shipped_algorithm(name, n);
      const std::vector<std::vector<Contents>> got = output_contents(p);
      for (int r = 0; r < n; ++r)
        for (int i = 0; i < p.buffer_chunks(Buffer::output); ++i)
          if (const std::optional<Contents> want = expected_output(p, r, i)) {
            EXPECT_EQ(got[r][i], *want) << name << " on " << n << ": rank " << r << " output " << i;
          }
    }
  EXPECT_EQ(shipped_algorithm("alltonext", 8).goal(), "alltonext");
  EXPECT_EQ(shipped_algorithm("two-step-alltoall", 8).goal(), "alltoall");
}

}  // namespace
}  // namespace canopy::algo
