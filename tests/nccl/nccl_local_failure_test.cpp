// Without a GPU: which failed collectives end a communicator spanning processes (nccl/comm/local_failure.hpp: only
// ncclInvalidArgument on a ready Canopy handle whose other ranks live in other processes), the message the other
// processes see, and the exit handler's count of live communicators (nccl/comm/exit_guard.hpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "nccl/comm/comm_handle.hpp"
#include "nccl/comm/exit_guard.hpp"
#include "nccl/comm/local_failure.hpp"

namespace canopy::nccl_api {
namespace {

// A ready handle of rank `rank` of `nranks` whose process holds `own` ranks (no Communicator behind it: only the
// rule's inputs are read).
std::unique_ptr<ncclComm> ready_handle(int rank, int nranks, int own) {
  auto c = std::make_unique<ncclComm>();
  c->rank = rank;
  c->nranks = nranks;
  c->shared = std::make_shared<SharedComm>(nullptr, nranks, rank, own);
  c->state = CommState::ready;
  return c;
}

TEST(NcclLocalFailure, OnlyAnInvalidArgumentOnACommunicatorSpanningProcessesEndsIt) {
  const auto spanning = ready_handle(1, 3, 1);
  EXPECT_TRUE(ends_communicator(spanning.get(), ncclInvalidArgument));
  EXPECT_FALSE(ends_communicator(spanning.get(), ncclInvalidUsage));  // met alike by every rank
  EXPECT_FALSE(ends_communicator(spanning.get(), ncclRemoteError));   // already failed
  EXPECT_FALSE(ends_communicator(spanning.get(), ncclSuccess));
  const auto whole = ready_handle(0, 3, 3);  // ncclCommInitAll: every rank in this process
  EXPECT_FALSE(ends_communicator(whole.get(), ncclInvalidArgument));
  EXPECT_FALSE(ends_communicator(nullptr, ncclInvalidArgument));
}

TEST(NcclLocalFailure, AHandleNotReadyOrDestroyedIsLeftAlone) {
  auto pending = ready_handle(1, 2, 1);
  pending->state = CommState::pending;
  EXPECT_FALSE(ends_communicator(pending.get(), ncclInvalidArgument));
  auto destroyed = ready_handle(1, 2, 1);
  destroyed->magic = kDestroyedMagic;
  EXPECT_FALSE(ends_communicator(destroyed.get(), ncclInvalidArgument));
  auto failed_init = ready_handle(1, 2, 1);
  failed_init->state = CommState::failed;
  EXPECT_FALSE(ends_communicator(failed_init.get(), ncclInvalidArgument));
}

TEST(NcclLocalFailure, TheOthersAreToldWhichRankRefusedWhatAndWhy) {
  const std::string text =
      local_error_text(1, 3, "ncclAllReduce", "ncclAllReduce on communicator 0x1 (rank 1 of 3): recvbuff is NULL");
  EXPECT_THAT(text, ::testing::StartsWith("rank 1 of 3 refused its ncclAllReduce (ncclAllReduce on communicator 0x1 "
                                          "(rank 1 of 3): recvbuff is NULL), which the other ranks make"));
  EXPECT_THAT(text, ::testing::HasSubstr("the communicator failed on every rank"));
}

TEST(NcclExitGuard, EveryLiveCommunicatorIsTrackedUntilDestroyed) {
  const int before = tracked_at_exit();
  {
    const auto a = ready_handle(0, 2, 1);
    const auto b = ready_handle(1, 2, 1);
    EXPECT_EQ(tracked_at_exit(), before + 2);
    a->shared.reset();
    EXPECT_EQ(tracked_at_exit(), before + 1);
  }
  EXPECT_EQ(tracked_at_exit(), before);
}

}  // namespace
}  // namespace canopy::nccl_api
