// The NCCL API's error paths on any CPU (no GPU, no real NCCL: CANOPY_NCCL_LIBRARY names a missing file): null and
// destroyed communicators, bad types and operators, count overflow, null buffers, types Canopy does not serve,
// calls it does not serve, bad configs and ids, mismatched group nesting, PreMulSum operators' misuse, a bad
// CANOPY_NCCL_FORWARD, and a non-blocking init (ncclInProgress, then its end through ncclCommGetAsyncError). Each
// gives the right ncclResult_t and an ncclGetLastError that says what and why. A Canopy handle is made by ncclCommInitRank inside a group, which stays
// pending (checked calls, nothing run) until ncclGroupEnd, where its join fails for want of a GPU; every rank of an id
// in one group fails together, at once; CANOPY_NCCL_REAL=1 fails an in-process init that can have no real communicator.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nccl/comm/comm_handle.hpp"
#include "nccl/real/real_comm.hpp"

#include "tests/nccl/nccl_expect.hpp"

namespace {

using canopy::nccl_api::attach_real_comms;

const bool kNoRealNccl = [] { return setenv("CANOPY_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1) == 0; }();

using canopy::nccl_test::fake;
using canopy::nccl_test::last;

// `comm`'s init failed: ncclCommGetAsyncError says so (neither success nor in progress), and calls are refused.
void expect_failed_init(ncclComm_t comm) {
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_NE(async, ncclSuccess);
  EXPECT_NE(async, ncclInProgress);
  EXPECT_NCCL_ERROR(ncclAllReduce(fake(64), fake(64), 4, ncclFloat, ncclSum, comm, nullptr), ncclInvalidUsage,
                    "initialisation failed");
}

TEST(NcclApiErrors, NullCommunicator) {
  ASSERT_TRUE(kNoRealNccl);
  EXPECT_NCCL_ERROR(ncclAllReduce(fake(64), fake(64), 4, ncclFloat, ncclSum, nullptr, nullptr), ncclInvalidArgument,
                    "ncclAllReduce: comm is NULL");
  int n = 0;
  EXPECT_NCCL_ERROR(ncclCommCount(nullptr, &n), ncclInvalidArgument, "ncclCommCount: comm is NULL");
  EXPECT_NCCL_ERROR(ncclCommDestroy(nullptr), ncclInvalidArgument, "ncclCommDestroy: comm is NULL");
}

TEST(NcclApiErrors, MismatchedGroupNesting) {
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidUsage, "no group is open on this thread");
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidUsage, "every ncclGroupEnd must follow its own ncclGroupStart");
}

TEST(NcclApiErrors, BadConfigAndId) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << last();
  ncclComm_t comm = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0x1234;
  EXPECT_NCCL_ERROR(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclInvalidArgument, "not 0xcafebeef");
  EXPECT_NCCL_ERROR(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument, "rank is 2: it must be in 0 .. 1");
  ncclUniqueId garbage{};
  EXPECT_NCCL_ERROR(ncclCommInitRank(&comm, 1, garbage, 0), ncclInvalidArgument, "commId is not one");
  EXPECT_NCCL_ERROR(ncclCommInitAll(nullptr, 1, nullptr), ncclInvalidArgument, "ncclCommInitAll: comm is NULL");
}

TEST(NcclApiErrors, CallsOnACanopyCommunicator) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << last();
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess) << last();  // deferred to ncclGroupEnd
  ASSERT_NE(comm, nullptr);
  int n = 0, rank = -1;
  EXPECT_EQ(ncclCommCount(comm, &n), ncclSuccess);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(ncclCommUserRank(comm, &rank), ncclSuccess);
  EXPECT_EQ(rank, 0);
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclInProgress);

  // Served and valid: checked and queued for ncclGroupEnd (a copy of any type is served, as bytes). Every
  // ncclDataType_t is served for reductions too (int8, uint32, uint64 and the fp8 types included).
  for (ncclDataType_t t : {ncclInt8, ncclUint32, ncclUint64, ncclFloat8e4m3, ncclFloat8e5m2})
    EXPECT_EQ(ncclAllReduce(fake(64), fake(64), 4, t, ncclAvg, comm, nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclAllGather(fake(64), fake(64), 4, ncclUint64, comm, nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclAllReduce(fake(64), fake(64), 0, ncclFloat, ncclSum, comm, nullptr), ncclSuccess);  // nothing to do
  // Not served and no real NCCL: inside a group that is reported by ncclGroupEnd (the call says why already).
  EXPECT_EQ(ncclSend(fake(64), 4, ncclFloat, 0, comm, nullptr), ncclSuccess) << last();
  EXPECT_NE(last().find("ncclSend is not served by Canopy and no real NCCL communicator exists"), std::string::npos)
      << last();
  EXPECT_NE(last().find("CANOPY_NCCL_LIBRARY"), std::string::npos) << last();
  // Each call's own arguments are still checked and its own error returned.
  EXPECT_NCCL_ERROR(ncclAllReduce(fake(64), fake(64), 4, static_cast<ncclDataType_t>(42), ncclSum, comm, nullptr),
                    ncclInvalidArgument, "datatype 42 is not an ncclDataType_t");
  EXPECT_NCCL_ERROR(ncclAllReduce(fake(64), fake(64), 4, ncclFloat, static_cast<ncclRedOp_t>(-1), comm, nullptr),
                    ncclInvalidArgument, "op -1 is not an ncclRedOp_t");
  EXPECT_NCCL_ERROR(ncclReduce(fake(64), fake(64), 4, ncclFloat, static_cast<ncclRedOp_t>(9), 0, comm, nullptr),
                    ncclInvalidArgument, "ncclRedOpCreatePreMulSum did not make it");
  EXPECT_NCCL_ERROR(ncclBroadcast(fake(64), fake(64), 4, ncclFloat, 3, comm, nullptr), ncclInvalidArgument,
                    "root is 3");
  EXPECT_NCCL_ERROR(ncclAllReduce(fake(64), fake(64), SIZE_MAX / 2, ncclFloat, ncclSum, comm, nullptr),
                    ncclInvalidArgument, "overflows a 64-bit byte size");
  EXPECT_NCCL_ERROR(ncclAllReduce(nullptr, fake(64), 4, ncclFloat, ncclSum, comm, nullptr), ncclInvalidArgument,
                    "sendbuff is NULL");
  EXPECT_NCCL_ERROR(ncclAllGather(fake(64), nullptr, 4, ncclFloat, comm, nullptr), ncclInvalidArgument,
                    "recvbuff is NULL");
  // A valid call after an error was returned inside this group is refused, not queued to be dropped.
  EXPECT_NCCL_ERROR(ncclAllGather(fake(64), fake(64), 4, ncclUint64, comm, nullptr), ncclInvalidUsage,
                    "an earlier call of this thread's NCCL group failed");

  // The group saw failed calls: ncclGroupEnd fails with the first (the refused send) and issues nothing. Without a
  // GPU the join failed too; with one (these CPU tests also run on the GPU machine) it succeeded.
  EXPECT_NCCL_ERROR(ncclGroupEnd(), ncclInvalidUsage, "a call inside the group failed");
  EXPECT_NE(last().find("ncclSend is not served by Canopy"), std::string::npos) << last();
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
  (void)cudaGetLastError();
  if (gpus == 0) {
    expect_failed_init(comm);
  } else {
    EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    EXPECT_EQ(async, ncclSuccess) << "a GPU is visible: the join should have succeeded";
  }

  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_NCCL_ERROR(ncclAllReduce(fake(64), fake(64), 4, ncclFloat, ncclSum, comm, nullptr), ncclInvalidUsage,
                    "the communicator was destroyed");
  EXPECT_NCCL_ERROR(ncclCommDestroy(comm), ncclInvalidUsage, "the communicator was destroyed");
  EXPECT_NCCL_ERROR(ncclSend(fake(64), 4, ncclFloat, 0, comm, nullptr), ncclInvalidUsage, "was destroyed");
}

TEST(NcclApiErrors, EveryRankOfAnIdInOneGroupFailsTogetherAtOnceWithoutAGpu) {
  // nccl-tests -g 2 on a machine without a GPU: the group holds both ranks, made one communicator here
  // (nccl/init/group_inits.hpp), so both fail with the reason, without waiting for a bootstrap.
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << last();
  ncclComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r) ASSERT_EQ(ncclCommInitRank(&comms[r], 2, id, r), ncclSuccess) << last();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(ncclGroupEnd(), ncclSuccess);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_NE(last().find("ncclGroupEnd (deferred ncclCommInitRank)"), std::string::npos) << last();
  for (ncclComm_t comm : comms) {
    expect_failed_init(comm);
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  }
}

TEST(NcclApiErrors, PreMulSumOperators) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << last();
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess) << last();  // pending until ncclGroupEnd
  float scalar = 0.25f;
  ncclRedOp_t op{};
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm), ncclSuccess) << last();
  EXPECT_GE(static_cast<int>(op), static_cast<int>(ncclNumOps));
  EXPECT_EQ(ncclAllReduce(fake(64), fake(64), 4, ncclFloat32, op, comm, nullptr), ncclSuccess) << last();
  EXPECT_EQ(ncclReduceScatter(fake(64), fake(64), 4, ncclFloat32, op, comm, nullptr), ncclSuccess) << last();
  EXPECT_NCCL_ERROR(ncclAllReduce(fake(64), fake(64), 4, ncclFloat16, op, comm, nullptr), ncclInvalidArgument,
                    "is a PreMulSum operator made for ncclFloat32, but the call's datatype is ncclFloat16");
  EXPECT_NCCL_ERROR(ncclRedOpCreatePreMulSum(&op, nullptr, ncclFloat32, ncclScalarDevice, comm), ncclInvalidArgument,
                    "scalar is NULL");
  EXPECT_EQ(ncclRedOpDestroy(op, comm), ncclSuccess) << last();
  EXPECT_NCCL_ERROR(ncclAllReduce(fake(64), fake(64), 4, ncclFloat32, op, comm, nullptr), ncclInvalidArgument,
                    "or ncclRedOpDestroy destroyed it");
  EXPECT_NCCL_ERROR(ncclRedOpDestroy(op, comm), ncclInvalidArgument, "destroyed already");
  EXPECT_NCCL_ERROR(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument, "is a built-in operator");
  EXPECT_NE(ncclGroupEnd(), ncclSuccess);  // calls above failed (and there is no GPU)
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_NCCL_ERROR(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm),
                    ncclInvalidUsage, "the communicator was destroyed");
}

TEST(NcclApiErrors, NonBlockingInitReportsInProgressThenItsEnd) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << last();
  ncclComm_t comm = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclInProgress) << last();
  ASSERT_NE(comm, nullptr);
  ncclResult_t async = ncclInProgress;
  // The join runs on its own thread; poll as NCCL's users do (no sleep: it ends, failing here without a GPU). A call
  // while the poll says "in progress" is refused as such, unless the join ended between the poll and the call: then
  // the call reports that end (and the next poll says so).
  while (async == ncclInProgress) {
    ASSERT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    if (async == ncclInProgress) {
      const ncclResult_t r = ncclAllReduce(fake(64), fake(64), 4, ncclFloat, ncclSum, comm, nullptr);
      const std::string said = last();
      if (r == ncclInvalidUsage && said.find("initialisation failed") != std::string::npos) {
        ASSERT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
        EXPECT_NE(async, ncclInProgress) << "the call saw the init end, the poll after it did not";
        continue;
      }
      EXPECT_EQ(r, ncclInvalidArgument) << said;
      EXPECT_NE(said.find("poll ncclCommGetAsyncError until it reports ncclSuccess"), std::string::npos) << said;
      std::this_thread::yield();
    }
  }
  if (async == ncclSuccess) {
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
    GTEST_SKIP() << "a GPU is present: the non-blocking init succeeded";
  }
  EXPECT_NCCL_ERROR(ncclAllReduce(fake(64), fake(64), 4, ncclFloat, ncclSum, comm, nullptr), ncclInvalidUsage,
                    "initialisation failed");
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  // Destroying a handle whose non-blocking init is still joining waits for it.
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << last();
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclInProgress) << last();
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(NcclApiErrors, BadForwardListFailsInit) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << last();
  ncclComm_t comm = nullptr;
  setenv("CANOPY_NCCL_FORWARD", "allreduce,sendreceive", 1);
  EXPECT_NCCL_ERROR(ncclCommInitRank(&comm, 1, id, 0), ncclInvalidArgument,
                    "ncclCommInitRank: CANOPY_NCCL_FORWARD names 'sendreceive'");
  unsetenv("CANOPY_NCCL_FORWARD");
  setenv("CANOPY_NCCL_REAL", "sometimes", 1);
  EXPECT_NCCL_ERROR(ncclCommInitRank(&comm, 1, id, 0), ncclInvalidArgument, "CANOPY_NCCL_REAL='sometimes'");
  unsetenv("CANOPY_NCCL_REAL");
}

// An in-process communicator's handles (ncclCommInitAll, a group's inits made whole) get the real NCCL's beside them
// as a join does: none here (the real NCCL is pointed away), which CANOPY_NCCL_REAL=1 makes an init failure.
TEST(NcclApiErrors, RequiredRealCommunicatorFailsAnInProcessInitWithoutOne) {
  std::unique_ptr<ncclComm> a = std::make_unique<ncclComm>(), b = std::make_unique<ncclComm>();
  const std::vector<ncclComm*> handles = {a.get(), b.get()};
  const std::vector<int> devices = {0, 1};
  // Nothing would use one (no forward list; Canopy serves point-to-point in one process): none, saying so.
  EXPECT_EQ(attach_real_comms(handles, devices, "ncclCommInitAll"), ncclSuccess) << last();
  EXPECT_EQ(a->real_why_not, canopy::nccl_api::kNothingUsesIt);
  // A forward list would: then no real NCCL found is the reason.
  ASSERT_TRUE(canopy::nccl_api::parse_forward_list("sendrecv", &a->forward).ok());
  b->forward = a->forward;
  EXPECT_EQ(attach_real_comms(handles, devices, "ncclCommInitAll"), ncclSuccess) << last();
  EXPECT_NE(a->real_why_not.find("CANOPY_NCCL_LIBRARY"), std::string::npos) << a->real_why_not;
  EXPECT_EQ(b->real_why_not, a->real_why_not);
  setenv("CANOPY_NCCL_REAL", "0", 1);
  EXPECT_EQ(attach_real_comms(handles, devices, "ncclCommInitAll"), ncclSuccess) << last();
  EXPECT_EQ(a->real_why_not, "CANOPY_NCCL_REAL=0");
  setenv("CANOPY_NCCL_REAL", "1", 1);
  EXPECT_NCCL_ERROR(attach_real_comms(handles, devices, "ncclGroupEnd (deferred ncclCommInitRank)"), ncclInvalidUsage,
                    "ncclGroupEnd (deferred ncclCommInitRank): CANOPY_NCCL_REAL=1 asks for a real NCCL communicator "
                    "beside Canopy's: CANOPY_NCCL_LIBRARY");
  unsetenv("CANOPY_NCCL_REAL");
  EXPECT_EQ(a->real, nullptr);
  EXPECT_EQ(b->real, nullptr);
}

TEST(NcclApiErrors, InitWithoutAGpuSaysWhy) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << last();
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRank(&comm, 1, id, 0);
  if (r == ncclSuccess) GTEST_SKIP() << "a GPU is present: the init succeeded";
  EXPECT_NE(last().find("ncclCommInitRank: "), std::string::npos) << last();
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  ncclComm_t comms[1] = {};
  if (ncclCommInitAll(comms, 1, nullptr) != ncclSuccess) {
    EXPECT_NE(last().find("ncclCommInitAll: "), std::string::npos) << last();
  }
}

TEST(NcclApiErrors, ForwardedCallWithoutARealNccl) {
  std::uint64_t not_canopys[4] = {};  // a handle without Canopy's magic word: the real NCCL's, to be passed to it
  void* handle = nullptr;
  EXPECT_NCCL_ERROR(ncclCommRegister(reinterpret_cast<ncclComm_t>(not_canopys), fake(64), 64, &handle),
                    ncclInvalidUsage, "the real NCCL is not loaded");
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;  // Canopy's own (group.hpp): no group is open
  EXPECT_NCCL_ERROR(ncclGroupSimulateEnd(&info), ncclInvalidUsage, "ncclGroupSimulateEnd: no group is open");
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
}

// ncclMemAlloc/ncclMemFree are Canopy's own (nccl/api/api_memory.cpp): their argument checks, and without a GPU a CUDA
// error that names the failing call.
TEST(NcclApiErrors, MemAllocChecksItsArguments) {
  EXPECT_NCCL_ERROR(ncclMemAlloc(nullptr, 1024), ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  void* ptr = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(ncclMemAlloc(&ptr, 0), ncclSuccess);  // as NCCL: nothing, and a NULL pointer
  EXPECT_EQ(ptr, nullptr);
  EXPECT_EQ(ncclMemFree(nullptr), ncclSuccess);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    EXPECT_NCCL_ERROR(ncclMemAlloc(&ptr, 1024), ncclUnhandledCudaError, "ncclMemAlloc: cudaGetDevice failed");
    EXPECT_EQ(ptr, nullptr);
  }
}

}  // namespace
