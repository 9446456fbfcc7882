// FdChannel without a GPU: descriptors of pipes cross between threads and between processes and name the same
// object; many at once; a malformed connection is refused and logged while real messages still arrive; another
// job's secret cannot reach the endpoint; another uid is refused; waits end at the timeout; nothing leaks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "runtime/transport/ipc/fd_channel.hpp"
#include "tests/runtime/transport/ipc/fd_channel_testing.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

// Writes `text` into the write end received and reads it from the read end kept.
void expect_same_pipe(int read_end, const FdMessage& m, const std::string& text) {
  ASSERT_EQ(m.fds.size(), 1u);
  ASSERT_EQ(::write(m.fds[0].get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
  std::string got(text.size(), '\0');
  ASSERT_EQ(::read(read_end, got.data(), got.size()), static_cast<ssize_t>(text.size()));
  EXPECT_EQ(got, text);
}

TEST(FdChannel, ADescriptorCrossesBetweenThreadsAndNamesTheSamePipe) {
  const int before = open_fds();
  {
    const BootstrapSecret s = fresh_secret();
    auto zero = listen(s, 0, this_process(2), quick()), one = listen(s, 1, this_process(2), quick());
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    std::thread sender([&] {
      const int fds[] = {p[1]};
      EXPECT_TRUE(zero->send(1, 42, fds, "the write end").ok());
    });
    FdMessage m;
    const Status st = one->receive(0, 42, &m);
    sender.join();
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(m.from, 0);
    EXPECT_EQ(m.payload, "the write end");
    expect_same_pipe(p[0], m, "through the channel");
    ::close(p[0]);
    ::close(p[1]);
  }
  EXPECT_EQ(open_fds(), before);  // every descriptor closed: the channels' and the received one
}

TEST(FdChannel, ManyDescriptorsInOneMessage) {
  const BootstrapSecret s = fresh_secret();
  auto zero = listen(s, 0, this_process(2), quick()), one = listen(s, 1, this_process(2), quick());
  std::vector<int> fds;
  for (int k = 0; k < 600; ++k) fds.push_back(::dup(0));
  std::thread sender([&] { EXPECT_TRUE(zero->send(1, 7, fds, "").ok()); });
  FdMessage m;
  const Status st = one->receive(0, 7, &m);
  sender.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(m.fds.size(), 600u);
  for (int fd : fds) ::close(fd);
}

TEST(FdChannel, MessagesFromOthersWaitForTheirReceive) {
  const BootstrapSecret s = fresh_secret();
  auto zero = listen(s, 0, this_process(3), quick()), one = listen(s, 1, this_process(3), quick()),
       two = listen(s, 2, this_process(3), quick());
  std::thread a([&] { EXPECT_TRUE(one->send(0, 1, {}, "from one").ok()); });
  std::thread b([&] { EXPECT_TRUE(two->send(0, 1, {}, "from two").ok()); });
  FdMessage m2, m1;
  ASSERT_TRUE(zero->receive(2, 1, &m2).ok());
  ASSERT_TRUE(zero->receive(1, 1, &m1).ok());
  a.join();
  b.join();
  EXPECT_EQ(m2.payload, "from two");
  EXPECT_EQ(m1.payload, "from one");
}

TEST(FdChannel, ADescriptorCrossesBetweenProcesses) {
  const BootstrapSecret s = fresh_secret();
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // rank 1: sends its pipe's write end to rank 0
    std::unique_ptr<FdChannel> c;
    if (!FdChannel::listen(s, 1, {::getppid(), ::getpid()}, quick(), &c).ok()) ::_exit(2);
    const int fds[] = {p[1]};
    ::_exit(c->send(0, 9, fds, "child").ok() ? 0 : 3);
  }
  auto zero = listen(s, 0, {::getpid(), child}, quick());
  FdMessage m;
  const Status st = zero->receive(1, 9, &m);
  ASSERT_TRUE(st.ok()) << st.message();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::close(p[1]);  // ours; the received copy must still write into the same pipe
  expect_same_pipe(p[0], m, "from the parent through the child's descriptor");
  ::close(p[0]);
}

TEST(FdChannel, AMalformedConnectionIsRefusedAndTheChannelGoesOn) {
  const BootstrapSecret s = fresh_secret();
  std::vector<std::string> log;
  auto zero = listen(s, 0, this_process(2), quick(&log)), one = listen(s, 1, this_process(2), quick());
  std::thread garbage([&] {
    const int fd = connect_to(fd_channel_name(s, 0));
    ASSERT_GE(fd, 0);
    const char junk[64] = "GET / HTTP/1.1\r\n\r\n";
    (void)::write(fd, junk, sizeof junk);
    ::close(fd);
    EXPECT_TRUE(one->send(0, 5, {}, "real").ok());
  });
  FdMessage m;
  const Status st = zero->receive(1, 5, &m);
  garbage.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(m.payload, "real");
  ASSERT_FALSE(log.empty());
  EXPECT_THAT(log[0], HasSubstr("refused a malformed descriptor message"));
}

TEST(FdChannel, AnotherJobsSecretCannotReachTheEndpoint) {
  auto zero = listen(fresh_secret(), 0, this_process(2), quick());
  std::unique_ptr<FdChannel> stranger;
  FdChannel::Options o = quick();
  o.timeout = std::chrono::milliseconds(100);
  ASSERT_TRUE(FdChannel::listen(fresh_secret(), 1, this_process(2), o, &stranger).ok());
  const Status s = stranger->send(0, 1, {}, "let me in");
  EXPECT_EQ(s.code(), StatusCode::remote_error);
  EXPECT_THAT(s.message(), HasSubstr("rank 0's descriptor endpoint did not answer within 100 ms"));
}

TEST(FdChannel, OnlyOurOwnUserMayHandUsDescriptors) {
  EXPECT_TRUE(peer_allowed({1234, 1000}, 1000));
  EXPECT_FALSE(peer_allowed({1234, 1001}, 1000));
  EXPECT_FALSE(peer_allowed({1234, 0}, 1000));  // not even root, for a job of another user
}

TEST(FdChannel, AReceiveEndsAtTheTimeoutNamingThePeer) {
  FdChannel::Options o = quick();
  o.timeout = std::chrono::milliseconds(100);
  auto zero = listen(fresh_secret(), 0, this_process(4), o);
  FdMessage m;
  const Status s = zero->receive(3, 11, &m);
  EXPECT_EQ(s.code(), StatusCode::remote_error);
  EXPECT_THAT(s.message(), HasSubstr("no descriptors from rank 3 (tag 11) within 100 ms"));
}

TEST(FdChannel, ARankTakenTwiceOnOneHostIsAnError) {
  const BootstrapSecret s = fresh_secret();
  auto first = listen(s, 0, this_process(1), quick());
  std::unique_ptr<FdChannel> second;
  const Status st = FdChannel::listen(s, 0, this_process(1), quick(), &second);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("is another process of this job already rank 0"));
}

}  // namespace
}  // namespace canopy
