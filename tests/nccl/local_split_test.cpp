// LocalSplits: the ranks of one in-process communicator meet for ncclCommSplit, from one thread (a group) or a thread
// each; the last to file makes the children once; a rank left alone fails saying how to call it.
#include "nccl/init/local_split.hpp"

#include <gmock/gmock.h>

#include <cstdint>
#include <thread>

namespace canopy::nccl_api {
namespace {

using namespace std::chrono_literals;

// Children as stand-in pointers (never dereferenced): 1000 x round + rank + 1, null for a negative color.
struct FakeMaker {
  int rounds = 0;
  ncclResult_t result = ncclSuccess;
  LocalSplits::Maker maker() {
    return [this](const std::vector<SplitRequest>& requests, std::vector<ncclComm*>* children, std::string* why) {
      ++rounds;
      if (result != ncclSuccess) {
        *why = "made nothing";
        return result;
      }
      children->clear();
      for (std::size_t r = 0; r < requests.size(); ++r) {
        const std::uintptr_t stand_in = 1000u * rounds + r + 1;
        children->push_back(requests[r].color < 0 ? nullptr : reinterpret_cast<ncclComm*>(stand_in));
      }
      return ncclSuccess;
    };
  }
};

const SharedComm* comm_id(std::uintptr_t k) { return reinterpret_cast<const SharedComm*>(k * 64); }

SplitRequest request(int color, int key) {
  SplitRequest q;
  q.color = color;
  q.key = key;
  return q;
}

TEST(LocalSplits, OneThreadFilesEveryRankThenTakesEachChild) {
  FakeMaker fake;
  LocalSplits splits(fake.maker());
  const auto t0 = splits.file(comm_id(1), 0, 3, request(0, 0));
  const auto t1 = splits.file(comm_id(1), 1, 3, request(-1, 0));
  EXPECT_EQ(fake.rounds, 0);
  const auto t2 = splits.file(comm_id(1), 2, 3, request(0, 0));
  EXPECT_EQ(fake.rounds, 1);  // made once, by the last to file
  ncclComm* out = nullptr;
  std::string why;
  ASSERT_EQ(splits.take(t2, 2, 1s, &out, &why), ncclSuccess);
  EXPECT_EQ(out, reinterpret_cast<ncclComm*>(std::uintptr_t{1003}));
  ASSERT_EQ(splits.take(t1, 1, 1s, &out, &why), ncclSuccess);
  EXPECT_EQ(out, nullptr);  // NCCL_SPLIT_NOCOLOR
  ASSERT_EQ(splits.take(t0, 0, 1s, &out, &why), ncclSuccess);
  EXPECT_EQ(out, reinterpret_cast<ncclComm*>(std::uintptr_t{1001}));
}

TEST(LocalSplits, AThreadPerRankMeetsAndSuccessiveSplitsAreRoundsOfTheirOwn) {
  FakeMaker fake;
  LocalSplits splits(fake.maker());
  std::vector<ncclComm*> got(4, nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      for (int round = 0; round < 2; ++round) {
        std::string why;
        const auto ticket = splits.file(comm_id(2), r, 2, request(0, 0));
        EXPECT_EQ(splits.take(ticket, r, 5s, &got[round * 2 + r], &why), ncclSuccess) << why;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(fake.rounds, 2);
  EXPECT_EQ(got[0], reinterpret_cast<ncclComm*>(std::uintptr_t{1001}));
  EXPECT_EQ(got[1], reinterpret_cast<ncclComm*>(std::uintptr_t{1002}));
  EXPECT_EQ(got[2], reinterpret_cast<ncclComm*>(std::uintptr_t{2001}));
  EXPECT_EQ(got[3], reinterpret_cast<ncclComm*>(std::uintptr_t{2002}));
}

TEST(LocalSplits, ARankLeftAloneFailsSayingHowToCallIt) {
  FakeMaker fake;
  LocalSplits splits(fake.maker());
  const auto ticket = splits.file(comm_id(3), 0, 2, request(0, 0));
  ncclComm* out = nullptr;
  std::string why;
  EXPECT_EQ(splits.take(ticket, 0, 50ms, &out, &why), ncclInvalidUsage);
  EXPECT_THAT(why, ::testing::HasSubstr("1 of 2 have called it"));
  EXPECT_THAT(why, ::testing::HasSubstr("inside one ncclGroupStart/ncclGroupEnd, or each from a thread of its own"));
  EXPECT_EQ(fake.rounds, 0);
}

TEST(LocalSplits, TheMakersErrorReachesEveryRank) {
  FakeMaker fake;
  fake.result = ncclInvalidArgument;
  LocalSplits splits(fake.maker());
  const auto t0 = splits.file(comm_id(4), 0, 2, request(0, 0));
  const auto t1 = splits.file(comm_id(4), 1, 2, request(0, 0));
  for (const auto& [ticket, local] : {std::pair{t0, 0}, std::pair{t1, 1}}) {
    ncclComm* out = reinterpret_cast<ncclComm*>(std::uintptr_t{7});
    std::string why;
    EXPECT_EQ(splits.take(ticket, local, 1s, &out, &why), ncclInvalidArgument);
    EXPECT_EQ(out, nullptr);
    EXPECT_EQ(why, "made nothing");
  }
}

}  // namespace
}  // namespace canopy::nccl_api
