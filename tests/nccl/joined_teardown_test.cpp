// JoinedTeardown: the handles one process holds of one joined communicator end without waiting for each other.
#include "nccl/init/joined_teardown.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "nccl/comm/shared_comm.hpp"

namespace canopy::nccl_api {
namespace {

using namespace std::chrono_literals;

// Stands for the communicators' end barrier: each handle's end waits until `members` ends have begun (or 5 s).
struct Barrier {
  std::mutex mutex;
  std::condition_variable arrived;
  int members = 0, here = 0, timed_out = 0, ended = 0;

  std::shared_ptr<SharedComm> handle() {
    return std::shared_ptr<SharedComm>(new SharedComm(nullptr, members, 0, 1), [this](SharedComm* s) {
      std::unique_lock lock(mutex);
      ++here;
      arrived.notify_all();
      if (!arrived.wait_for(lock, 5s, [&] { return here >= members; })) ++timed_out;
      ++ended;
      delete s;
    });
  }
};

JoinedTeardown::Id id_of(unsigned char b) {
  JoinedTeardown::Id id{};
  id[0] = b;
  return id;
}

TEST(JoinedTeardown, HandlesOfOneIdEndedInTurnOnOneThreadDoNotWaitForEachOther) {
  JoinedTeardown teardown;
  Barrier barrier;
  barrier.members = 3;
  const JoinedTeardown::Id id = id_of(1);
  std::vector<std::shared_ptr<SharedComm>> handles;
  for (int k = 0; k < 3; ++k) {
    handles.push_back(barrier.handle());
    teardown.joined(id);
  }
  const auto start = std::chrono::steady_clock::now();
  teardown.end(id, std::move(handles[0]));  // returns at once: its end waits on a thread
  teardown.end(id, std::move(handles[1]));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(barrier.ended, 0);
  teardown.end(id, std::move(handles[2]));  // the last: ends here, then waits for the others
  EXPECT_EQ(barrier.ended, 3);
  EXPECT_EQ(barrier.timed_out, 0);
}

TEST(JoinedTeardown, AHandleAloneOfItsIdEndsOnTheCallersThread) {
  JoinedTeardown teardown;
  Barrier barrier;
  barrier.members = 1;
  teardown.joined(id_of(1));
  teardown.joined(id_of(2));  // another communicator's handle does not hold it back
  teardown.end(id_of(1), barrier.handle());
  EXPECT_EQ(barrier.ended, 1);
  // Not counted (a split's handle): ends here too.
  Barrier other;
  other.members = 1;
  teardown.end(id_of(3), other.handle());
  EXPECT_EQ(other.ended, 1);
}

}  // namespace
}  // namespace canopy::nccl_api
