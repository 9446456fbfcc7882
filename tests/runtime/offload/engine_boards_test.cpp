// EngineBoards without a GPU: the two processes' phase one played by two threads, each with its own fake device memory
// (fake_memory.hpp), the boards in plain memory and descriptors over a real FdChannel. Broadcasts from one root call
// after call and then from the other (the board reuse that once hung), allreduces that publish and map on both sides
// with descriptors both ways (whose sends wait for their receivers), refusals on either side, a long mixed sequence,
// and a process that stops calling: every case agrees on both sides or fails within its timeout, never hangs.
#include <gmock/gmock.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "runtime/offload/engine_boards.hpp"
#include "tests/runtime/transport/ipc/fake_memory.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

constexpr std::size_t kBytes = 4096;
constexpr std::chrono::milliseconds kTimeout{3000};

// Two processes' sides of the copy engines: their memory (one receive buffer each), channel and phase one.
struct TwoProcesses {
  std::array<EngineBoard, 2> board{};
  std::array<FakeMemory, 2> memory;
  std::array<std::unique_ptr<FdChannel>, 2> channel;
  std::array<std::unique_ptr<EngineBoards>, 2> engines;
  std::array<void*, 2> recv{};

  // `by_fd`: process p's buffer comes from cuMemCreate (crosses as a descriptor); `fd_buffers`: p sends them.
  explicit TwoProcesses(std::array<bool, 2> by_fd = {false, false}, std::array<bool, 2> fd_buffers = {true, true}) {
    BootstrapSecret secret{};
    EXPECT_TRUE(random_secret(&secret).ok());
    FdChannel::Options o;
    o.timeout = kTimeout;
    o.log = Logger(LogLevel::warn, ~0u);
    for (int p = 0; p < 2; ++p) {
      const Status s = FdChannel::listen(secret, p, {::getpid(), ::getpid()}, o, &channel[p]);
      EXPECT_TRUE(s.ok()) << s.message();
      const std::uintptr_t base = 0x10000 + 0x100000 * p;
      recv[p] = at(by_fd[p] ? memory[p].allocate_fd(base, 1 << 20) : memory[p].allocate(base, 1 << 20));
      engines[p] = std::make_unique<EngineBoards>(p, fd_buffers[p], channel[p].get(),
                                                  std::array<EngineBoard*, 2>{&board[0], &board[1]},
                                                  memory[p].driver());
    }
  }

  // Both processes at once: process 1 on a thread of its own. Each call's status and *shared, by process.
  struct Outcome {
    std::array<Status, 2> status;
    std::array<bool, 2> shared{};
  };
  Outcome both(const std::function<Status(int p, bool* shared)>& call) {
    Outcome out;
    std::thread one([&] { out.status[1] = call(1, &out.shared[1]); });
    out.status[0] = call(0, &out.shared[0]);
    one.join();
    return out;
  }
  // A broadcast's phase one: the root maps, the other publishes its receive buffer.
  Outcome broadcast(int root) {
    return both([&](int p, bool* shared) {
      void* const dst[] = {recv[p]};
      return engines[p]->agree(p == root, dst, kBytes, {}, kTimeout, shared);
    });
  }
  // A reduce's: the root publishes, the other maps.
  Outcome reduce(int root) {
    return both([&](int p, bool* shared) {
      void* const dst[] = {recv[p]};
      return engines[p]->agree(p != root, p == root ? std::span<void* const>(dst) : std::span<void* const>(), kBytes,
                               {}, kTimeout, shared);
    });
  }
  Outcome allreduce(std::array<std::string, 2> refuse = {}) {
    return both([&](int p, bool* shared) {
      return engines[p]->agree_both(recv[p], kBytes, {}, kTimeout, shared, refuse[p]);
    });
  }
};

void expect_agreed(const TwoProcesses::Outcome& o, bool shared) {
  for (int p = 0; p < 2; ++p) {
    EXPECT_TRUE(o.status[p].ok()) << "process " << p << ": " << o.status[p].message();
    EXPECT_EQ(o.shared[p], shared) << "process " << p;
  }
}

// Broadcasts from process 0 make process 1 publish call after call, so its board's two sets are reused after gaps;
// then process 1 roots, then they alternate. Every call agrees on both sides, and the root maps one buffer.
TEST(EngineBoards, BroadcastsFromOneRootThenTheOtherAgreeOnEveryCall) {
  TwoProcesses t;
  for (int root : {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1}) {
    SCOPED_TRACE(root);
    expect_agreed(t.broadcast(root), true);
    EXPECT_EQ(t.engines[root]->mapped().size(), 1u);
    EXPECT_NE(t.engines[root]->mapped()[0], nullptr);
  }
  EXPECT_EQ(t.engines[0]->calls(), 14u);
  EXPECT_EQ(t.engines[1]->calls(), 14u);
}

// An allreduce: both publish and both map. With cuMemCreate buffers on both sides each descriptor crosses once (the
// first call), and neither send waits on the other's: process 0 publishes first, process 1 maps first.
TEST(EngineBoards, AllreducesPublishAndMapOnBothSidesWithDescriptorsBothWays) {
  TwoProcesses t({true, true});
  for (int call = 0; call < 6; ++call) {
    SCOPED_TRACE(call);
    expect_agreed(t.allreduce(), true);
    for (int p = 0; p < 2; ++p) {
      ASSERT_EQ(t.engines[p]->mapped().size(), 1u);
      EXPECT_NE(t.engines[p]->mapped()[0], nullptr);
    }
  }
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ(t.memory[p].fds_made, 1) << "process " << p;  // its own buffer's descriptor, once
    EXPECT_EQ(t.memory[p].opened.size(), 1u) << "process " << p;  // the other's buffer, mapped once
  }
}

// Either side's refusal (in place, or a cuMemCreate buffer it may not send) leaves both on the kernels for that call,
// and says why on the refusing side only; the next call agrees again.
TEST(EngineBoards, ARefusalOnEitherSideLeavesBothProcessesOnTheKernels) {
  TwoProcesses t({false, true}, {true, false});  // process 1's buffer is cuMemCreate memory it does not send
  const TwoProcesses::Outcome refused = t.allreduce();
  expect_agreed(refused, false);
  EXPECT_EQ(t.engines[0]->unshared_why(), "");
  EXPECT_THAT(t.engines[1]->unshared_why(), HasSubstr("file descriptor"));
  EXPECT_THAT(t.engines[1]->unshared_why(), HasSubstr("CANOPY_ENGINE_FD_BUFFERS=1"));  // the cause: by_fd

  TwoProcesses u;
  expect_agreed(u.allreduce({"the allreduce is in place", ""}), false);
  EXPECT_THAT(u.engines[0]->unshared_why(), HasSubstr("in place"));
  EXPECT_THAT(u.engines[0]->unshared_why(), ::testing::Not(HasSubstr("CANOPY_ENGINE_FD_BUFFERS")));
  expect_agreed(u.allreduce(), true);
  expect_agreed(u.broadcast(1), true);
}

// Broadcasts, reduces and allreduces from either root in a long mixed order: both boards stay in step.
TEST(EngineBoards, AMixedSequenceOfCallsKeepsBothBoardsInStep) {
  TwoProcesses t({true, false});
  int calls = 0;
  for (int round = 0; round < 5; ++round)
    for (int kind = 0; kind < 6; ++kind) {
      SCOPED_TRACE(fmt::format("round {} kind {}", round, kind));
      const TwoProcesses::Outcome o = kind < 2 ? t.broadcast(kind % 2) : kind < 4 ? t.reduce(kind % 2) : t.allreduce();
      expect_agreed(o, true);
      ++calls;
    }
  EXPECT_EQ(t.engines[0]->calls(), static_cast<std::uint64_t>(calls));
  EXPECT_EQ(t.engines[1]->calls(), static_cast<std::uint64_t>(calls));
  EXPECT_EQ(t.memory[0].fds_made, 1);  // process 0's cuMemCreate buffer crossed once in 30 calls
}

// A process that stops making calls: the other's wait ends at its timeout with an error that says what it waited for.
TEST(EngineBoards, AProcessThatStopsCallingFailsTheOthersWaitInTime) {
  TwoProcesses t;
  void* const none[] = {nullptr};
  bool shared = true;
  const auto start = std::chrono::steady_clock::now();
  const Status s = t.engines[0]->agree(true, std::span<void* const>(none).first(0), kBytes, {},
                                       std::chrono::milliseconds(200), &shared);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(shared);
  EXPECT_THAT(s.message(), HasSubstr("did not publish its receive buffers within 200 ms"));
  // A failed communicator ends the wait at once.
  const Status f = t.engines[0]->agree_both(t.recv[0], kBytes, [] { return true; }, kTimeout, &shared);
  EXPECT_FALSE(f.ok());
  EXPECT_THAT(f.message(), HasSubstr("the communicator failed meanwhile"));
}

// An abort from another thread (a watchdog's ncclCommAbort) while the call waits for the other process on the host:
// the wait ends as soon as the communicator has failed, not at its timeout.
TEST(EngineBoards, AFailureFromAnotherThreadEndsAWaitInProgress) {
  TwoProcesses t;
  std::atomic<bool> failed{false};
  bool shared = true;
  std::thread watchdog([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    failed.store(true);
  });
  const auto start = std::chrono::steady_clock::now();
  const Status f = t.engines[0]->agree_both(t.recv[0], kBytes, [&] { return failed.load(); }, kTimeout, &shared);
  const auto waited = std::chrono::steady_clock::now() - start;
  watchdog.join();
  EXPECT_GE(waited, std::chrono::milliseconds(200));
  EXPECT_LT(waited, std::chrono::seconds(2));  // kTimeout is far longer
  EXPECT_FALSE(shared);
  EXPECT_THAT(f.message(), HasSubstr("did not publish its receive buffers: the communicator failed meanwhile"));
}

}  // namespace
}  // namespace canopy
