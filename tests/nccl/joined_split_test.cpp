// split_joined (nccl/group/joined_split.hpp) on any CPU: a group's splits of joined handles run at once, so a thread
// that splits several handles of collectives spanning processes does not wait for itself; errors name the split. The
// splitter here is a simulated collective: each split returns once every one of the group has entered it (or fails
// after a while, which is what splitting one after another would do).
#include "nccl/group/joined_split.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "nccl/comm/comm_handle.hpp"
#include "runtime/comm/communicator.hpp"

namespace canopy::nccl_api {
namespace {

// Returns ok once `n` splits have entered, or a timeout error after `wait`.
class SimulatedCollective {
 public:
  SimulatedCollective(int n, std::chrono::milliseconds wait) : n_(n), wait_(wait) {}
  Status enter() {
    std::unique_lock lock(mutex_);
    ++entered_;
    all_.notify_all();
    if (!all_.wait_for(lock, wait_, [&] { return entered_ >= n_; }))
      return Status(StatusCode::remote_error, "the other ranks did not split within the wait");
    return Status();
  }

 private:
  int n_;
  std::chrono::milliseconds wait_;
  std::mutex mutex_;
  std::condition_variable all_;
  int entered_ = 0;
};

TEST(JoinedSplit, AGroupsSplitsRunAtOnceSoNoneWaitsForTheNext) {
  constexpr int kHandles = 3;
  SimulatedCollective collective(kHandles, std::chrono::seconds(20));
  std::vector<std::unique_ptr<ncclComm>> parents;
  std::vector<ncclComm_t> outs(kHandles, reinterpret_cast<ncclComm_t>(1));
  std::vector<std::pair<SplitRequest, ncclComm_t*>> splits;
  for (int k = 0; k < kHandles; ++k) {
    parents.push_back(std::make_unique<ncclComm>());
    splits.push_back({SplitRequest{parents.back().get(), NCCL_SPLIT_NOCOLOR, k}, &outs[k]});
  }
  std::atomic<int> calls = 0;
  const auto start = std::chrono::steady_clock::now();
  const ncclResult_t r = split_joined(splits, "ncclGroupEnd (deferred ncclCommSplit): ",
                                      [&](ncclComm* parent, int color, int key, std::unique_ptr<Communicator>* child) {
                                        EXPECT_EQ(parent, parents[key].get());
                                        EXPECT_EQ(color, NCCL_SPLIT_NOCOLOR);
                                        ++calls;
                                        child->reset();
                                        return collective.enter();
                                      });
  EXPECT_EQ(r, ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(calls.load(), kHandles);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));  // not one wait per split
  for (ncclComm_t out : outs) EXPECT_EQ(out, nullptr);  // no color: no child, written
}

TEST(JoinedSplit, AFailedSplitFailsTheGroupNamingWhy) {
  std::vector<std::unique_ptr<ncclComm>> parents;
  std::vector<ncclComm_t> outs(2, nullptr);
  std::vector<std::pair<SplitRequest, ncclComm_t*>> splits;
  for (int k = 0; k < 2; ++k) {
    parents.push_back(std::make_unique<ncclComm>());
    splits.push_back({SplitRequest{parents.back().get(), 7, k}, &outs[k]});
  }
  const ncclResult_t r =
      split_joined(splits, "ncclGroupEnd (deferred ncclCommSplit): ",
                   [&](ncclComm*, int, int key, std::unique_ptr<Communicator>* child) {
                     child->reset();
                     return key == 1 ? Status(StatusCode::remote_error, "process 1 (rank 1) ended during the split")
                                     : Status();
                   });
  EXPECT_EQ(r, ncclRemoteError);
  EXPECT_STREQ(ncclGetLastError(nullptr),
               "ncclGroupEnd (deferred ncclCommSplit): process 1 (rank 1) ended during the split");
  EXPECT_EQ(outs[1], nullptr);
}

// Split children's teardown keys: the same for the children of one split of one id here (they end without waiting
// for each other), apart from the parent's, other splits' and other colors'.
TEST(JoinedSplit, ChildrenOfOneSplitShareATeardownKeyAndNoOthers) {
  std::array<unsigned char, 128> parent{}, other{};
  for (std::size_t b = 0; b < parent.size(); ++b) parent[b] = static_cast<unsigned char>(b * 7 + 1);
  other = parent;
  other[3] ^= 1;
  EXPECT_EQ(split_child_key(parent, 0, 5), split_child_key(parent, 0, 5));
  EXPECT_NE(split_child_key(parent, 0, 5), parent);
  EXPECT_NE(split_child_key(parent, 0, 5), split_child_key(parent, 1, 5));
  EXPECT_NE(split_child_key(parent, 0, 5), split_child_key(parent, 0, 6));
  EXPECT_NE(split_child_key(parent, 0, 5), split_child_key(other, 0, 5));
  EXPECT_NE(split_child_key(parent, 0, 0), split_child_key(parent, 0, -1));
  // A child's own split: keyed off the child's key, so grandchildren differ from children.
  EXPECT_NE(split_child_key(split_child_key(parent, 0, 5), 0, 5), split_child_key(parent, 0, 5));
}

// Each split of a handle takes the next ordinal, whether it made a child or not.
TEST(JoinedSplit, EachSplitOfAHandleTakesTheNextOrdinal) {
  ncclComm parent;
  ncclComm_t out = nullptr;
  const auto none = [](ncclComm*, int, int, std::unique_ptr<Communicator>* child) {
    child->reset();
    return Status();
  };
  EXPECT_EQ(split_joined({{SplitRequest{&parent, NCCL_SPLIT_NOCOLOR, 0}, &out}}, "ncclCommSplit: ", none), ncclSuccess);
  EXPECT_EQ(split_joined({{SplitRequest{&parent, NCCL_SPLIT_NOCOLOR, 0}, &out}}, "ncclCommSplit: ", none), ncclSuccess);
  EXPECT_EQ(parent.splits, 2u);
}

}  // namespace
}  // namespace canopy::nccl_api
