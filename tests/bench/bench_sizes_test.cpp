// canopy bench's size list and counts, in nccl-tests' conventions, and its JSON rows.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "bench/harness/bench_json_reader.hpp"
#include "bench/harness/benchmark.hpp"

namespace canopy {
namespace {

TEST(BenchSizes, RangesListsAndFactors) {
  EXPECT_EQ(parse_bench_sizes("8:64"), (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(parse_bench_sizes("1M:64M:4"), (std::vector<std::uint64_t>{1 << 20, 4 << 20, 16 << 20, 64 << 20}));
  EXPECT_EQ(parse_bench_sizes("1K,1M"), (std::vector<std::uint64_t>{1024, 1 << 20}));
  EXPECT_EQ(parse_bench_sizes("8:1G").size(), 28u);
  EXPECT_THROW(parse_bench_sizes("0:8"), Error);
  EXPECT_THROW(parse_bench_sizes("1:2:3:4"), Error);
  EXPECT_THROW(parse_bench_sizes("1K,,2K"), Error);
}

TEST(BenchSizes, CountsFollowNcclTests) {
  EXPECT_EQ(bench_count(Collective::allreduce, 1 << 20, DataType::f32, 8), 1u << 18);
  EXPECT_EQ(bench_count(Collective::allgather, 1 << 20, DataType::f32, 8), 1u << 15);  // S is the output
  EXPECT_EQ(bench_count(Collective::reducescatter, 1 << 20, DataType::bf16, 4), 1u << 17);  // S is the input
  EXPECT_EQ(bench_count(Collective::allgather, 8, DataType::f32, 8), 0u);  // under one element per rank: skipped
}

}  // namespace
}  // namespace canopy

namespace canopy {
namespace {

// A program's row names its own goal as the collective (an alltoall program was labelled allreduce, the stand-in
// Collective for goals NCCL's collectives lack); planned collectives keep their name.
TEST(BenchJson, AProgramRowNamesItsGoal) {
  BenchRow program;
  program.collective = Collective::allreduce;
  program.algorithm = "two-step-alltoall";
  program.goal = "alltoall";
  BenchRow planned;
  planned.collective = Collective::reducescatter;
  const std::string json = bench_rows_json({program, planned});
  EXPECT_NE(json.find("\"collective\": \"alltoall\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"algorithm\": \"two-step-alltoall\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"collective\": \"reducescatter\""), std::string::npos) << json;
  EXPECT_EQ(json.find("\"collective\": \"allreduce\""), std::string::npos) << json;
}

}  // namespace
}  // namespace canopy

namespace canopy {
namespace {

// canopy bench --host-time: each row carries the host's time per call and the empty kernel's launch floor, and
// reads back; without it the row has neither key (the format other readers know).
TEST(BenchJson, HostTimesAndTheLaunchFloorWithHostTimeOnly) {
  BenchRow timed;
  timed.ranks = 2;
  timed.host_us = 5.25;
  timed.launch_us = 3.5;
  BenchRow plain;
  plain.ranks = 2;
  plain.host_us = 5.25;  // always measured, written only beside a floor
  const std::string json = bench_rows_json({timed, plain});
  const std::vector<BenchRow> back = read_bench_rows_json(json, "rows.json");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_DOUBLE_EQ(back[0].host_us, 5.25);
  EXPECT_DOUBLE_EQ(back[0].launch_us, 3.5);
  EXPECT_DOUBLE_EQ(back[1].host_us, 0);
  EXPECT_DOUBLE_EQ(back[1].launch_us, 0);
  EXPECT_EQ(json.find("\"launch_us\""), json.rfind("\"launch_us\"")) << json;  // one row has it
}

}  // namespace
}  // namespace canopy

namespace canopy {
namespace {

// canopy bench --rounds: a row of several rounds carries its rounds and both libraries' extremes beside the medians,
// and reads back; a row of one round has none of these keys, and reads back with the extremes at its time.
TEST(BenchJson, RoundsAndTheirExtremesBesideTheMedians) {
  BenchRow rounds;
  rounds.ranks = 2;
  rounds.rounds = 5;
  rounds.time_us = 10;
  rounds.time_min_us = 9.5;
  rounds.time_max_us = 11;
  rounds.nccl_time_us = 12;
  rounds.nccl_time_min_us = 11.5;
  rounds.nccl_time_max_us = 13;
  BenchRow one;
  one.ranks = 2;
  one.time_us = 7;
  const std::string json = bench_rows_json({rounds, one});
  EXPECT_NE(json.find("\"rounds\": 5"), std::string::npos) << json;
  EXPECT_EQ(json.find("\"rounds\""), json.rfind("\"rounds\"")) << "one row has rounds: " << json;
  const std::vector<BenchRow> back = read_bench_rows_json(json, "rows.json");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].rounds, 5);
  EXPECT_DOUBLE_EQ(back[0].time_min_us, 9.5);
  EXPECT_DOUBLE_EQ(back[0].time_max_us, 11);
  EXPECT_DOUBLE_EQ(back[0].nccl_time_min_us, 11.5);
  EXPECT_DOUBLE_EQ(back[0].nccl_time_max_us, 13);
  EXPECT_EQ(back[1].rounds, 1);
  EXPECT_DOUBLE_EQ(back[1].time_min_us, 7);
  EXPECT_DOUBLE_EQ(back[1].time_max_us, 7);
  // A malformed count of rounds is named.
  std::string bad = json;
  bad.replace(bad.find("\"rounds\": 5"), 11, "\"rounds\": 0");
  try {
    (void)read_bench_rows_json(bad, "rows.json");
    ADD_FAILURE() << "rounds 0 was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rows.json: error: row 0: rounds 0 must be a whole number >= 1"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace canopy

namespace canopy {
namespace {

// canopy bench -c sendrecv|alltoall|gather|scatter writes rows whose collective names the call: they read back with
// that name as their goal, so that canopy bench-compare pairs a sendrecv run with a sendrecv run.
TEST(BenchJson, PointToPointRowsReadBackUnderTheirCallsName) {
  BenchRow sendrecv;
  sendrecv.ranks = 2;
  sendrecv.goal = "sendrecv";
  sendrecv.time_us = 3;
  const std::vector<BenchRow> back = read_bench_rows_json(bench_rows_json({sendrecv}), "p2p.json");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].goal, "sendrecv");
  std::string bad = bench_rows_json({sendrecv});
  bad.replace(bad.find("sendrecv"), 8, "sendrcv_");
  try {
    (void)read_bench_rows_json(bad, "p2p.json");
    ADD_FAILURE() << "an unknown call was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is none of broadcast, reduce, allreduce, allgather, reducescatter, "
                                         "sendrecv, alltoall, gather, scatter"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace canopy
