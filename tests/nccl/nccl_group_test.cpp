// NCCL's error model inside groups (nccl/group/group.hpp), on any CPU, with a stand-in for the real NCCL
// (fake_real_nccl.cpp, loaded through CANOPY_NCCL_LIBRARY) that records which of its functions ran: the real NCCL's
// group is opened as deep as Canopy's and closed with it; ncclGroupSimulateEnd closes both and issues nothing; an
// error inside a group (a real call's, an argument's, or a call Canopy cannot serve) makes the outermost ncclGroupEnd
// return it with nothing of the group issued (the real NCCL's part closed by its ncclGroupSimulateEnd) and the
// thread's group state reset; a call made into a group that already returned an error is refused, never queued to be
// silently dropped (a caller that threw and never ended the group would otherwise lose every later collective).
// CANOPY_NCCL_REAL=0: no real communicator is made beside Canopy's, so its calls Canopy cannot serve are refused.
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#include "nccl/real/real_nccl.hpp"
#include "tests/nccl/nccl_expect.hpp"

namespace {

const bool kFakeRealNccl = [] {
  return setenv("CANOPY_NCCL_LIBRARY", CANOPY_FAKE_REAL_NCCL, 1) == 0 && setenv("CANOPY_NCCL_REAL", "0", 1) == 0;
}();

using canopy::nccl_test::fake;
using canopy::nccl_test::last;

// The stand-in's record of its calls ("GroupStart;Send(4);GroupEnd;"), read through its own exports, which only the
// stand-in has: found in the real NCCL the library loaded (if nothing has yet, this loads it), they say it is the
// stand-in.
struct FakeRealNccl {
  FakeRealNccl() {
    using canopy::nccl_api::real_nccl;
    EXPECT_TRUE(canopy::nccl_api::real_nccl_loaded()) << canopy::nccl_api::real_nccl_why_not();
    calls_ = real_nccl<const char* (*)()>("fake_nccl_calls");
    reset_ = real_nccl<void (*)()>("fake_nccl_reset");
    EXPECT_TRUE(calls_ && reset_) << "the stand-in real NCCL is not loaded: " << canopy::nccl_api::real_nccl_path();
    if (reset_) reset_();
  }
  std::string calls() const { return calls_ ? calls_() : "(not loaded)"; }
  void reset() const {
    if (reset_) reset_();
  }

 private:
  const char* (*calls_)() = nullptr;
  void (*reset_)() = nullptr;
};

// A communicator handle of the real NCCL's (no Canopy magic word): every call with it goes to the stand-in.
std::uint64_t g_real_comm_words[4] = {};
ncclComm_t real_comm() { return reinterpret_cast<ncclComm_t>(g_real_comm_words); }

// A Canopy handle inside an open group: pending until the outermost ncclGroupEnd (which fails its join without a
// GPU, and makes it with one).
ncclComm_t pending_canopy_comm() {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess) << last();
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess) << last();
  return comm;
}

TEST(NcclGroups, TheRealGroupIsOpenedAsDeepAsOursAndEndedWithIt) {
  ASSERT_TRUE(kFakeRealNccl);
  const FakeRealNccl fake_nccl;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(fake_nccl.calls(), "") << "the real NCCL's group is opened only when a call needs it";
  EXPECT_EQ(ncclSend(fake(64), 4, ncclFloat, 1, real_comm(), nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  EXPECT_EQ(fake_nccl.calls(), "GroupStart;GroupStart;Send(4);GroupEnd;GroupEnd;");
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupEnd: no group is open on this thread");
  EXPECT_EQ(fake_nccl.calls(), "GroupStart;GroupStart;Send(4);GroupEnd;GroupEnd;") << "no extra real ncclGroupEnd";
}

TEST(NcclGroups, SimulateEndClosesBothGroupsAndIssuesNothing) {
  const FakeRealNccl fake_nccl;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(64), 4, ncclFloat, 1, real_comm(), nullptr), ncclSuccess) << last();
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess) << last();
  EXPECT_EQ(fake_nccl.calls(), "GroupStart;Send(4);GroupSimulateEnd;") << "closed without being issued";
  EXPECT_FLOAT_EQ(info.estimatedTime, 12.5f) << "the real NCCL's estimate (Canopy had no calls of its own)";
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidUsage, "no group is open");  // ours is closed too
  EXPECT_EQ(fake_nccl.calls(), "GroupStart;Send(4);GroupSimulateEnd;");
}

TEST(NcclGroups, SimulateEndInsideANestedGroupClosesOneLevel) {
  const FakeRealNccl fake_nccl;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(64), 4, ncclFloat, 1, real_comm(), nullptr), ncclSuccess) << last();
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess) << last();
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();  // the outer level, issued
  EXPECT_EQ(fake_nccl.calls(), "GroupStart;GroupStart;Send(4);GroupSimulateEnd;GroupEnd;");
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidUsage, "no group is open");
}

TEST(NcclGroups, SimulateEndChecksItsArgument) {
  const FakeRealNccl fake_nccl;
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_NCCL_ERROR(ncclGroupSimulateEnd(&info), ncclInvalidUsage, "ncclGroupSimulateEnd: no group is open");
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ncclSimInfo_t garbage = info;
  garbage.magic = 0x1234;
  EXPECT_NCCL_ERROR(ncclGroupSimulateEnd(&garbage), ncclInvalidArgument, "NCCL_SIM_INFO_INITIALIZER");
  // The group is still open, and a null simInfo is a plain ncclGroupEnd (as NCCL's): its calls are issued.
  EXPECT_EQ(ncclSend(fake(64), 7, ncclFloat, 1, real_comm(), nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclGroupSimulateEnd(nullptr), ncclSuccess) << last();
  EXPECT_EQ(fake_nccl.calls(), "GroupStart;Send(7);GroupEnd;");
}

TEST(NcclGroups, ARealCallsErrorFailsGroupEndAndNothingOfTheGroupIsIssued) {
  const FakeRealNccl fake_nccl;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(64), 4, ncclFloat, 1, real_comm(), nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclSend(fake(64), 13, ncclFloat, 1, real_comm(), nullptr), ncclInvalidArgument);  // the real's error
  // A call after that error is refused at once, not forwarded.
  EXPECT_NCCL_ERROR(ncclRecv(fake(64), 5, ncclFloat, 1, real_comm(), nullptr), ncclInvalidUsage,
                    "an earlier call of this thread's NCCL group failed");
  EXPECT_NE(last().find("fake: a send of 13 elements is refused"), std::string::npos) << last();
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidArgument, "a call inside the group failed, so nothing of the group");
  EXPECT_NE(last().find("ncclSend (forwarded to the real NCCL) returned code 4"), std::string::npos) << last();
  EXPECT_EQ(fake_nccl.calls(), "GroupStart;Send(4);Send(13);GroupSimulateEnd;") << "the real group was not issued";
  // The thread's group state is reset: the next group works.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(64), 4, ncclFloat, 1, real_comm(), nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  EXPECT_EQ(fake_nccl.calls(), "GroupStart;Send(4);Send(13);GroupSimulateEnd;GroupStart;Send(4);GroupEnd;");
}

TEST(NcclGroups, ACallCanopyCannotServeIsReportedAtGroupEnd) {
  const FakeRealNccl fake_nccl;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ncclComm_t comm = pending_canopy_comm();
  ASSERT_NE(comm, nullptr);
  // No real communicator beside Canopy's yet (its init waits for this group's end): not served, reported by
  // ncclGroupEnd. The calls say why already, and later calls of the group still go on (a caller's ncclGroupEnd always
  // runs).
  EXPECT_EQ(ncclSend(fake(64), 4, ncclFloat, 0, comm, nullptr), ncclSuccess) << last();
  EXPECT_NE(last().find("ncclSend is not served by Canopy"), std::string::npos) << last();
  EXPECT_EQ(ncclRecv(fake(64), 4, ncclFloat, 0, comm, nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclAlltoAll(fake(64), fake(64), 4, ncclFloat, comm, nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclGather(fake(64), fake(64), 4, ncclFloat, 0, comm, nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclScatter(fake(64), fake(64), 4, ncclFloat, 0, comm, nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclAllReduce(fake(64), fake(64), 4, ncclFloat, ncclSum, comm, nullptr), ncclSuccess) << last();
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidUsage, "a call inside the group failed, so nothing of the group");
  EXPECT_NE(last().find("ncclSend is not served by Canopy"), std::string::npos) << last();
  EXPECT_NE(last().find("its initialisation waits for the outermost ncclGroupEnd"), std::string::npos) << last();
  EXPECT_EQ(fake_nccl.calls(), "") << "nothing reached the real NCCL";
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidUsage, "no group is open");  // the group state was reset
  // Outside a group the same call fails at once.
  EXPECT_NCCL_ERROR(ncclSend(fake(64), 4, ncclFloat, 0, comm, nullptr), ncclInvalidUsage, "ncclSend");
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess) << last();
}

TEST(NcclGroups, AGroupLeftOpenAfterAnErrorNeverSwallowsLaterCalls) {
  // What a caller that throws on the first error does (PyTorch's gather: ncclGroupStart, then a failing call throws
  // before its ncclGroupEnd): the group stays open. Later calls must fail loudly, never return success unissued.
  const FakeRealNccl fake_nccl;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ncclComm_t comm = pending_canopy_comm();
  ASSERT_NE(comm, nullptr);
  EXPECT_NCCL_ERROR(ncclAllReduce(nullptr, fake(64), 4, ncclFloat, ncclSum, comm, nullptr), ncclInvalidArgument,
                    "sendbuff is NULL");
  for (int later = 0; later < 3; ++later) {
    EXPECT_NCCL_ERROR(ncclAllReduce(fake(64), fake(64), 4, ncclFloat, ncclSum, comm, nullptr), ncclInvalidUsage,
                      "refused: an earlier call of this thread's NCCL group failed");
    EXPECT_NE(last().find("sendbuff is NULL"), std::string::npos) << "names the first failure: " << last();
    EXPECT_NCCL_ERROR(ncclBroadcast(fake(64), fake(64), 4, ncclFloat, 0, comm, nullptr), ncclInvalidUsage,
                      "end the group with ncclGroupEnd");
    EXPECT_NCCL_ERROR(ncclSend(fake(64), 4, ncclFloat, 1, real_comm(), nullptr), ncclInvalidUsage,
                      "an earlier call of this thread's NCCL group failed");
  }
  // Each call's own argument errors come first.
  EXPECT_NCCL_ERROR(ncclBroadcast(fake(64), fake(64), 4, ncclFloat, 5, comm, nullptr), ncclInvalidArgument,
                    "root is 5");
  EXPECT_EQ(fake_nccl.calls(), "") << "nothing was forwarded after the error";
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidArgument, "sendbuff is NULL");
  // A new group on this thread starts clean.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(64), 4, ncclFloat, 1, real_comm(), nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << last();
  EXPECT_EQ(fake_nccl.calls(), "GroupStart;Send(4);GroupEnd;");
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess) << last();
}

TEST(NcclGroups, GroupsOfOtherThreadsAreTheirOwn) {
  const FakeRealNccl fake_nccl;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fake(64), 13, ncclFloat, 1, real_comm(), nullptr), ncclInvalidArgument);
  ncclResult_t other = ncclInternalError;
  std::thread([&] {  // another thread's calls are outside this thread's failed group
    other = ncclSend(fake(64), 4, ncclFloat, 1, real_comm(), nullptr);
  }).join();
  EXPECT_EQ(other, ncclSuccess);
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidArgument, "a call inside the group failed");
  EXPECT_EQ(fake_nccl.calls(), "GroupStart;Send(13);Send(4);GroupSimulateEnd;");
}

}  // namespace
