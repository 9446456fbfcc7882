// ncclSend, ncclRecv, ncclAlltoAll, ncclGather and ncclScatter on Canopy communicators, through the C API on any CPU
// (nccl/api/api_point_to_point.cpp). The handles are ranks of one process on a SharedComm without a GPU whose
// send_recv is the runtime's own matcher (runtime/call/point_to_point.hpp): every group the library issues must match
// as the runtime requires, and the tests read its transfers. The real NCCL is the stand-in of nccl_group_test.cpp
// (fake_real_nccl.cpp), which records what is forwarded to it. Pinned: calls inside a group (nested too) issued at
// the outermost ncclGroupEnd as one send_recv per communicator (ncclGroupSimulateEnd: none); lone calls of two
// threads meeting as NCCL's do; a group whose every rank is here refused at once where it does not match; NCCL's
// argument errors (the call's, and ncclGroupEnd's with nothing issued); CANOPY_NCCL_FORWARD=sendrecv,alltoall,gather,
// scatter and the runtime's `unsupported` sending them to the real NCCL as before, or refusing them where there is
// none; the CANOPY_LOG=info lines.
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "nccl/comm/comm_handle.hpp"
#include "nccl/config/forward_list.hpp"
#include "nccl/real/real_nccl.hpp"
#include "runtime/call/point_to_point.hpp"
#include "tests/nccl/nccl_expect.hpp"

namespace {

using canopy::PointToPoint;
using canopy::Status;
using canopy::StatusCode;
using canopy::Transfer;
using canopy::nccl_api::CommState;
using canopy::nccl_test::fake;
using canopy::nccl_test::last;

const bool kStandInLoaded = [] { return setenv("CANOPY_NCCL_LIBRARY", CANOPY_FAKE_REAL_NCCL, 1) == 0; }();

// The stand-in's record of the calls forwarded to it ("GroupStart;Send(4);GroupEnd;"), emptied first.
std::string (*stand_in_calls())() {
  static const auto calls = canopy::nccl_api::real_nccl<const char* (*)()>("fake_nccl_calls");
  static const auto reset = canopy::nccl_api::real_nccl<void (*)()>("fake_nccl_reset");
  if (reset) reset();
  return [] { return std::string(calls ? calls() : "(not loaded)"); };
}

std::uint64_t g_stand_in_words[4] = {};
ncclComm_t stand_in_comm() { return reinterpret_cast<ncclComm_t>(g_stand_in_words); }

// Ranks 0 .. n-1 of one communicator, all in this process, its point-to-point answered by the runtime's matcher.
// `probe` is its answer to the empty group that asks whether it serves point-to-point at all.
class Ranks {
 public:
  explicit Ranks(int n, Status probe = Status()) : n_(n), probe_(std::move(probe)) {
    shared_ = std::make_shared<canopy::nccl_api::SharedComm>(
        nullptr, n, 0, n, [this](std::span<const PointToPoint> ops) { return run(ops); });
    for (int r = 0; r < n; ++r) {
      auto h = std::make_unique<ncclComm>();
      h->rank = r;
      h->nranks = n;
      h->local = r;
      h->shared = shared_;
      h->state = CommState::ready;
      handles_.push_back(std::move(h));
    }
  }
  ncclComm_t operator[](int r) { return handles_[r].get(); }
  // The groups send_recv took and matched, as transfers.
  std::vector<std::vector<Transfer>> groups() {
    std::lock_guard lock(mutex_);
    return groups_;
  }
  int refused() {
    std::lock_guard lock(mutex_);
    return refused_;
  }
  void give_real(ncclComm_t real) {
    for (auto& h : handles_) h->real = real;
  }
  void forward(const std::string& list) {
    canopy::nccl_api::ForwardSet set;
    ASSERT_TRUE(canopy::nccl_api::parse_forward_list(list, &set).ok());
    for (auto& h : handles_) h->forward = set;
  }

 private:
  Status run(std::span<const PointToPoint> ops) {
    if (ops.empty()) return probe_;
    std::vector<Transfer> transfers;
    Status s = canopy::match_point_to_point(ops, n_, &transfers);
    std::lock_guard lock(mutex_);
    if (s.ok())
      groups_.push_back(transfers);
    else
      ++refused_;
    return s;
  }

  int n_;
  Status probe_;
  std::shared_ptr<canopy::nccl_api::SharedComm> shared_;
  std::vector<std::unique_ptr<ncclComm>> handles_;
  std::mutex mutex_;
  std::vector<std::vector<Transfer>> groups_;
  int refused_ = 0;
};

TEST(NcclPointToPoint, ASendAndItsReceiveInOneGroupAreOneSendRecv) {
  ASSERT_TRUE(kStandInLoaded);
  Ranks ranks(2);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(0x1000), 7, ncclFloat32, 1, ranks[0], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclRecv(fake(0x2000), 7, ncclFloat32, 0, ranks[1], nullptr), ncclSuccess) << last();
  EXPECT_TRUE(ranks.groups().empty()) << "nothing issued before ncclGroupEnd";
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  const auto groups = ranks.groups();
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(groups[0].size(), 1u);
  EXPECT_EQ(groups[0][0].from, fake(0x1000));
  EXPECT_EQ(groups[0][0].to, fake(0x2000));
  EXPECT_EQ(groups[0][0].count, 7u);
  EXPECT_EQ(groups[0][0].dtype, canopy::DataType::f32);
}

TEST(NcclPointToPoint, NestedGroupsIssueAtTheOutermostEnd) {
  Ranks ranks(3);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 3; ++r) {  // a ring, each rank's calls in a nested group of its own
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclSend(fake(0x100 * (r + 1)), 4, ncclBfloat16, (r + 1) % 3, ranks[r], nullptr), ncclSuccess);
    EXPECT_EQ(ncclRecv(fake(0x1000 * (r + 1)), 4, ncclBfloat16, (r + 2) % 3, ranks[r], nullptr), ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  }
  EXPECT_TRUE(ranks.groups().empty());
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  const auto groups = ranks.groups();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].size(), 3u);
}

TEST(NcclPointToPoint, AlltoAllGatherAndScatterInOneGroupFollowNcclsDefinitions) {
  const int n = 3;
  Ranks ranks(n);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(ncclAlltoAll(fake(0x1000 * (r + 1)), fake(0x10000 * (r + 1)), 2, ncclInt64, ranks[r], nullptr),
              ncclSuccess)
        << last();
    EXPECT_EQ(ncclGather(fake(0x100 * (r + 1)), fake(0x90000), 3, ncclUint8, 0, ranks[r], nullptr), ncclSuccess);
    EXPECT_EQ(ncclScatter(fake(0xA0000), fake(0x200 * (r + 1)), 5, ncclFloat16, 2, ranks[r], nullptr), ncclSuccess);
  }
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  const auto groups = ranks.groups();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].size(), 9u + 3u + 3u);
  bool alltoall = false, gather = false, scatter = false;
  for (const Transfer& t : groups[0]) {
    if (t.dtype == canopy::DataType::i64 && t.sender == 2 && t.receiver == 0)  // rank 2's block 0 to rank 0's block 2
      alltoall = t.from == fake(0x3000) && t.to == fake(0x10000 + 2 * 16);
    if (t.dtype == canopy::DataType::u8 && t.sender == 1)  // into the root's block 1
      gather = t.from == fake(0x200) && t.to == fake(0x90000 + 3);
    if (t.dtype == canopy::DataType::f16 && t.receiver == 1)  // the root's block 1
      scatter = t.from == fake(0xA0000 + 10) && t.to == fake(0x400);
  }
  EXPECT_TRUE(alltoall && gather && scatter);
}

TEST(NcclPointToPoint, OneGroupOverTwoCommunicatorsIssuesOneSendRecvOnEach) {
  Ranks a(2), b(2);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ncclSend(fake(0x10), 3, ncclInt64, 1 - r, a[r], nullptr), ncclSuccess) << last();
    EXPECT_EQ(ncclAlltoAll(fake(0x100), fake(0x200), 5, ncclUint8, b[r], nullptr), ncclSuccess) << last();
    EXPECT_EQ(ncclRecv(fake(0x20), 3, ncclInt64, 1 - r, a[r], nullptr), ncclSuccess) << last();
  }
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  ASSERT_EQ(a.groups().size(), 1u);
  EXPECT_EQ(a.groups()[0].size(), 2u);
  ASSERT_EQ(b.groups().size(), 1u);
  EXPECT_EQ(b.groups()[0].size(), 4u);
}

TEST(NcclPointToPoint, SimulateEndIssuesNoneOfThem) {
  Ranks ranks(1);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(0x10), 4, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclRecv(fake(0x20), 4, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess);
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess) << last();
  EXPECT_TRUE(ranks.groups().empty());
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidUsage, "no group is open");
}

TEST(NcclPointToPoint, LoneCallsOfTwoThreadsMeetAsNcclsDo) {
  Ranks ranks(2);
  ncclResult_t sent = ncclInternalError;
  std::thread sender([&] { sent = ncclSend(fake(0x10), 65540, ncclUint8, 1, ranks[0], nullptr); });
  const ncclResult_t received = ncclRecv(fake(0x20), 65540, ncclUint8, 0, ranks[1], nullptr);
  sender.join();
  EXPECT_EQ(sent, ncclSuccess);
  EXPECT_EQ(received, ncclSuccess) << last();
  const auto groups = ranks.groups();
  ASSERT_EQ(groups.size(), 1u) << "the two lone calls are one send_recv";
  EXPECT_EQ(groups[0][0].count, 65540u);
}

TEST(NcclPointToPoint, ASendToItselfAndCountZeroAreServed) {
  Ranks ranks(1);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(0x10), 1, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclRecv(fake(0x20), 1, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclSend(nullptr, 0, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess) << "count 0 takes a NULL buffer";
  EXPECT_EQ(ncclRecv(nullptr, 0, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  ASSERT_EQ(ranks.groups().size(), 1u);
  EXPECT_EQ(ranks.groups()[0].size(), 2u);
}

TEST(NcclPointToPoint, AGroupOfEveryRankThatDoesNotMatchIsRefusedAtItsEnd) {
  Ranks ranks(2);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(0x10), 8, ncclFloat32, 1, ranks[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclRecv(fake(0x20), 7, ncclFloat32, 0, ranks[1], nullptr), ncclSuccess);
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidArgument, "pass the same count and type on both sides");
  EXPECT_NE(last().find("ncclGroupEnd: "), std::string::npos) << last();
  EXPECT_TRUE(ranks.groups().empty());
  // A send to a rank that posts nothing of it, from a group holding both ranks: refused at once, not waited for.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(0x10), 8, ncclFloat32, 1, ranks[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(0x10), 8, ncclFloat32, 0, ranks[1], nullptr), ncclSuccess);
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidArgument, "has no matching receive");
  EXPECT_EQ(ranks.refused(), 2);
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidUsage, "no group is open");  // the group state was reset
}

TEST(NcclPointToPoint, ArgumentErrorsAreNcclsAndFailTheirGroupWithNothingIssued) {
  Ranks ranks(2);
  EXPECT_NCCL_ERROR(ncclSend(nullptr, 4, ncclFloat32, 1, ranks[0], nullptr), ncclInvalidArgument,
                    "sendbuff is NULL (count 4)");
  EXPECT_NCCL_ERROR(ncclRecv(nullptr, 4, ncclFloat32, 1, ranks[0], nullptr), ncclInvalidArgument,
                    "recvbuff is NULL (count 4)");
  EXPECT_NCCL_ERROR(ncclSend(fake(0x10), 4, ncclFloat32, 2, ranks[0], nullptr), ncclInvalidArgument,
                    "peer is 2: it must be a rank, 0 .. 1");
  EXPECT_NCCL_ERROR(ncclRecv(fake(0x10), 4, ncclFloat32, -1, ranks[0], nullptr), ncclInvalidArgument, "peer is -1");
  EXPECT_NCCL_ERROR(ncclSend(fake(0x10), 4, static_cast<ncclDataType_t>(42), 1, ranks[0], nullptr), ncclInvalidArgument,
                    "datatype 42 is not an ncclDataType_t");
  EXPECT_NCCL_ERROR(ncclGather(fake(0x10), fake(0x20), 4, ncclFloat32, 2, ranks[0], nullptr), ncclInvalidArgument,
                    "root is 2");
  EXPECT_NCCL_ERROR(ncclScatter(fake(0x10), fake(0x20), 4, ncclFloat32, -3, ranks[1], nullptr), ncclInvalidArgument,
                    "root is -3");
  EXPECT_NCCL_ERROR(ncclAlltoAll(fake(0x10), nullptr, 4, ncclFloat32, ranks[1], nullptr), ncclInvalidArgument,
                    "recvbuff is NULL");
  EXPECT_NCCL_ERROR(ncclAlltoAll(fake(0x10), fake(0x20), SIZE_MAX / 4, ncclFloat32, ranks[1], nullptr),
                    ncclInvalidArgument, "overflows a 64-bit byte size");
  // Where NCCL uses no buffer: a gather's receive off the root, a scatter's send off the root.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGather(fake(0x10), nullptr, 4, ncclFloat32, 1, ranks[0], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclGather(fake(0x20), fake(0x30), 4, ncclFloat32, 1, ranks[1], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclScatter(nullptr, fake(0x40), 4, ncclFloat32, 1, ranks[0], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclScatter(fake(0x50), fake(0x60), 4, ncclFloat32, 1, ranks[1], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  EXPECT_EQ(ranks.groups().size(), 1u);
  // Inside a group: the call returns its error, later calls are refused, ncclGroupEnd returns it, nothing issued.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclRecv(fake(0x20), 4, ncclFloat32, 0, ranks[1], nullptr), ncclSuccess);
  EXPECT_NCCL_ERROR(ncclSend(nullptr, 4, ncclFloat32, 1, ranks[0], nullptr), ncclInvalidArgument, "sendbuff is NULL");
  EXPECT_NCCL_ERROR(ncclSend(fake(0x10), 4, ncclFloat32, 1, ranks[0], nullptr), ncclInvalidUsage,
                    "an earlier call of this thread's NCCL group failed");
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidArgument, "a call inside the group failed, so nothing of the group");
  EXPECT_EQ(ranks.groups().size(), 1u) << "nothing more issued";
  EXPECT_EQ(ranks.refused(), 0);
  EXPECT_NCCL_ERROR(ncclSend(fake(0x10), 4, ncclFloat32, 1, nullptr, nullptr), ncclInvalidArgument,
                    "ncclSend: comm is NULL");
}

TEST(NcclPointToPoint, TheForwardSwitchSendsEachNamedCallToTheRealNccl) {
  auto calls = stand_in_calls();
  Ranks ranks(1);
  ranks.give_real(stand_in_comm());
  ranks.forward("sendrecv,gather");
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(0x10), 4, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclRecv(fake(0x20), 4, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclGather(fake(0x10), fake(0x20), 5, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclAlltoAll(fake(0x10), fake(0x20), 6, ncclFloat32, ranks[0], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclScatter(fake(0x10), fake(0x20), 7, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  EXPECT_EQ(calls(), "GroupStart;Send(4);Recv(4);Gather(5);GroupEnd;");
  const auto groups = ranks.groups();
  ASSERT_EQ(groups.size(), 1u) << "AlltoAll and Scatter served by Canopy";
  EXPECT_EQ(groups[0].size(), 2u);
  // All of them, outside a group too.
  calls = stand_in_calls();
  ranks.forward("sendrecv,alltoall,gather,scatter");
  EXPECT_EQ(ncclAlltoAll(fake(0x10), fake(0x20), 6, ncclFloat32, ranks[0], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclScatter(fake(0x10), fake(0x20), 7, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess) << last();
  EXPECT_EQ(calls(), "AlltoAll(6);Scatter(7);");
  EXPECT_EQ(ranks.groups().size(), 1u);
}

TEST(NcclPointToPoint, WhereTheRuntimeDoesNotServeThemTheyGoWhereTheyWentBefore) {
  auto calls = stand_in_calls();
  const Status unsupported(StatusCode::unsupported,
                           "send_recv (0 ops): point-to-point on a communicator of several "
                           "hosts is not served yet");
  Ranks with_real(2, unsupported);
  with_real.give_real(stand_in_comm());
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(0x10), 4, ncclFloat32, 1, with_real[0], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclRecv(fake(0x20), 4, ncclFloat32, 0, with_real[1], nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  EXPECT_EQ(ncclAlltoAll(fake(0x10), fake(0x20), 3, ncclFloat32, with_real[0], nullptr), ncclSuccess) << last();
  EXPECT_EQ(calls(), "GroupStart;Send(4);Recv(4);GroupEnd;AlltoAll(3);");
  EXPECT_TRUE(with_real.groups().empty());
  // Without a real communicator beside Canopy's: refused as before, at once outside a group, at its end inside one.
  Ranks alone(2, unsupported);
  EXPECT_NCCL_ERROR(ncclSend(fake(0x10), 4, ncclFloat32, 1, alone[0], nullptr), ncclInvalidUsage,
                    "ncclSend is not served by Canopy and no real NCCL communicator exists");
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGather(fake(0x10), fake(0x20), 4, ncclFloat32, 0, alone[1], nullptr), ncclSuccess) << last();
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidUsage, "ncclGather is not served by Canopy");
  // An in-place all-to-all is Canopy's where the runtime serves point-to-point, even with a real NCCL beside: its send
  // buffer is first copied aside on its stream, which without a GPU fails naming the CUDA error, nothing forwarded.
  Ranks served(2);
  served.give_real(stand_in_comm());
  calls = stand_in_calls();
  EXPECT_NCCL_ERROR(ncclAlltoAll(fake(0x10), fake(0x10), 5, ncclFloat32, served[0], nullptr), ncclUnhandledCudaError,
                    "in place, its send buffer is copied aside first (40 bytes)");
  EXPECT_EQ(calls(), "");
}

TEST(NcclPointToPoint, ALoneSendWhosePeerNeverCallsFailsAfterTheTimeout) {
  ASSERT_EQ(setenv("CANOPY_BOOTSTRAP_TIMEOUT_S", "0.2", 1), 0);
  Ranks ranks(2);
  EXPECT_NCCL_ERROR(ncclSend(fake(0x10), 4, ncclFloat32, 1, ranks[0], nullptr), ncclInvalidUsage,
                    "waited 0.2 s for the matching calls");
  EXPECT_NE(last().find("inside one group"), std::string::npos) << last();
  unsetenv("CANOPY_BOOTSTRAP_TIMEOUT_S");
  EXPECT_TRUE(ranks.groups().empty());
  // Withdrawn: a later pair meets afresh.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(0x10), 4, ncclFloat32, 1, ranks[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclRecv(fake(0x20), 4, ncclFloat32, 0, ranks[1], nullptr), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  EXPECT_EQ(ranks.groups().size(), 1u);
}

TEST(NcclPointToPoint, TheLogSaysServedByCanopyOrForwardedToTheRealNccl) {
  ASSERT_EQ(setenv("CANOPY_LOG", "info", 1), 0);
  Ranks ranks(1);  // its log reads CANOPY_LOG when made
  unsetenv("CANOPY_LOG");
  ranks.give_real(stand_in_comm());
  ranks.forward("scatter");
  testing::internal::CaptureStderr();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(0x10), 4, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclRecv(fake(0x20), 4, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclScatter(fake(0x10), fake(0x20), 7, ncclFloat32, 0, ranks[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("nccl: ncclSend ncclFloat32 [16, 64) (rank 0 of 1): served by Canopy"), std::string::npos) << log;
  EXPECT_NE(log.find("nccl: ncclRecv ncclFloat32 [16, 64) (rank 0 of 1): served by Canopy"), std::string::npos) << log;
  EXPECT_NE(log.find("nccl: ncclScatter (rank 0 of 1): forwarded to the real NCCL: CANOPY_NCCL_FORWARD names "
                     "scatter"),
            std::string::npos)
      << log;
}

}  // namespace
