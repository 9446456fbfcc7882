// What another local process can and cannot do to an FdChannel (docs/multi-process.md): endpoint names are a keyed
// function of the job's secret; a process that is not the one recorded for any rank is refused by the receiver before
// a byte is read, and one of the job claiming another rank than its own right after the header, each with a warning
// naming its pid, and the channel goes on; a process squatting a rank's name gets nothing from a sender, which fails
// naming both pids; another user is refused on both ends; refusals are logged without flooding the log; what a peer
// can make the channel keep is bounded. Impostors are forked children speaking the real wire (fd_channel_wire.hpp);
// pipes carry what they saw back to the test.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>

#include "core/sha256.hpp"
#include "tests/runtime/transport/ipc/fd_channel_testing.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

std::string hex_of(const BootstrapSecret& s) {
  std::string out;
  for (unsigned char b : s) out += fmt::format("{:02x}", b);
  return out;
}

// One byte from `fd` within 10 s, or 0.
char read_byte(int fd) {
  pollfd p{fd, POLLIN, 0};
  char c = 0;
  if (::poll(&p, 1, 10000) != 1 || ::read(fd, &c, 1) != 1) return 0;
  return c;
}

// The child's side of a test: its exit status says whether it did everything it meant to.
int wait_child(pid_t child) {
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// Sends a well-formed message claiming to be rank `from` (tag `tag`, `payload`, `fd` beside) on connected `socket`,
// then waits for the acknowledgement: 'a' if it came, 'n' if the connection closed without one.
char send_claiming(int socket, int from, std::uint32_t tag, const std::string& payload, int fd) {
  FdWireHeader h;
  h.from = from;
  h.tag = tag;
  h.fds = 1;
  h.payload = static_cast<std::uint32_t>(payload.size());
  set_deadline(socket, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  // Writes may fail once the receiver has refused us: what matters is whether anything was taken.
  (void)(write_all(socket, &h, sizeof h) && write_all(socket, payload.data(), payload.size()) &&
         send_fds(socket, std::span<const int>(&fd, 1)));
  char ack = 0;
  return read_all(socket, &ack, 1) ? 'a' : 'n';
}

TEST(FdChannelNames, AreAKeyedFunctionOfTheSecret) {
  const BootstrapSecret a = fresh_secret(), b = fresh_secret();
  SCOPED_TRACE("secrets " + hex_of(a) + " and " + hex_of(b));
  EXPECT_EQ(fd_channel_name(a, 0), fd_channel_name(a, 0));
  EXPECT_NE(fd_channel_name(a, 0), fd_channel_name(b, 0));
  EXPECT_NE(fd_channel_name(a, 0), fd_channel_name(a, 1));
  // Exactly HMAC-SHA256 keyed by the secret over the domain-separated label, cut to 128 bits.
  const std::string key(reinterpret_cast<const char*>(a.data()), a.size());
  EXPECT_EQ(fd_channel_name(a, 3),
            "canopy-" + hmac_sha256_hex(key, std::string("canopy fd channel v1\0" "3", 22)).substr(0, 32));
  // Nothing of the secret shows: no 8 hex digits of it appear in any rank's name.
  const std::string secret_hex = hex_of(a);
  for (int rank = 0; rank < 8; ++rank) {
    const std::string name = fd_channel_name(a, rank);
    EXPECT_LE(name.size() + 1, sizeof(sockaddr_un{}.sun_path));
    for (std::size_t at = 0; at + 8 <= secret_hex.size(); ++at)
      EXPECT_EQ(name.find(secret_hex.substr(at, 8)), std::string::npos) << name;
  }
}

TEST(FdChannelChecks, AConnectionFromAProcessNotRecordedIsRefusedAndTheChannelGoesOn) {
  const BootstrapSecret s = fresh_secret();
  std::vector<std::string> log;
  auto zero = listen(s, 0, this_process(2), quick(&log)), one = listen(s, 1, this_process(2), quick());
  int given[2], told[2];  // the pipe whose write end the impostor offers; the impostor's reports
  ASSERT_EQ(::pipe(given), 0);
  ASSERT_EQ(::pipe(told), 0);
  const pid_t impostor = ::fork();
  ASSERT_GE(impostor, 0);
  if (impostor == 0) {  // knows the name (it holds the secret), is of our user, but no process the bootstrap recorded
    ::close(given[0]);
    const int socket = connect_to(fd_channel_name(s, 0));
    if (socket < 0) ::_exit(2);
    const char sent = 's';
    if (::write(told[1], &sent, 1) != 1) ::_exit(3);
    const char answer = send_claiming(socket, 1, 5, "from an impostor", given[1]);
    ::_exit(::write(told[1], &answer, 1) == 1 ? 0 : 4);
  }
  ::close(told[1]);
  ASSERT_EQ(read_byte(told[0]), 's');  // its connection is queued before the real one
  std::thread real([&] { EXPECT_TRUE(one->send(0, 5, {}, "real").ok()); });
  FdMessage m;
  const Status st = zero->receive(1, 5, &m);
  real.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(m.payload, "real");
  EXPECT_TRUE(m.fds.empty());
  EXPECT_EQ(read_byte(told[0]), 'n');  // never acknowledged
  EXPECT_EQ(wait_child(impostor), 0);
  EXPECT_EQ(zero->refused(), 1u);
  EXPECT_EQ(zero->pending(), 0u);
  EXPECT_TRUE(logged(log, fmt::format("refused a descriptor connection from pid {}, which is no process of this job",
                                      impostor)))
      << (log.empty() ? "no log line" : log[0]);
  // No copy of the write end it offered stayed anywhere: with ours closed, the pipe reads end-of-file.
  ::close(given[1]);
  ASSERT_EQ(::fcntl(given[0], F_SETFL, O_NONBLOCK), 0);
  char c = 0;
  EXPECT_EQ(::read(given[0], &c, 1), 0);
  ::close(given[0]);
  ::close(told[0]);
}

TEST(FdChannelChecks, AProcessOfTheJobClaimingAnotherRankIsRefused) {
  const BootstrapSecret s = fresh_secret();
  std::vector<std::string> log;
  int go[2], told[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(told), 0);
  const pid_t liar = ::fork();
  ASSERT_GE(liar, 0);
  if (liar == 0) {  // recorded as rank 2, says it is rank 1
    if (read_byte(go[0]) != 'g') ::_exit(2);
    const int socket = connect_to(fd_channel_name(s, 0));
    if (socket < 0 || ::write(told[1], "s", 1) != 1) ::_exit(3);
    const char answer = send_claiming(socket, 1, 5, "as rank 1", 0);
    ::_exit(::write(told[1], &answer, 1) == 1 ? 0 : 4);
  }
  ::close(told[1]);
  const std::vector<pid_t> pids{::getpid(), ::getpid(), liar};
  auto zero = listen(s, 0, pids, quick(&log)), one = listen(s, 1, pids, quick());
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ASSERT_EQ(read_byte(told[0]), 's');  // its connection is queued before the real one
  std::thread real([&] { EXPECT_TRUE(one->send(0, 5, {}, "real").ok()); });
  FdMessage m;
  const Status st = zero->receive(1, 5, &m);
  real.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(m.payload, "real");
  EXPECT_EQ(read_byte(told[0]), 'n');  // refused once its header was read
  EXPECT_EQ(wait_child(liar), 0);
  EXPECT_EQ(zero->refused(), 1u);
  EXPECT_TRUE(logged(log, fmt::format("refused a descriptor message from pid {} claiming to be rank 1, whose process "
                                      "the bootstrap recorded as pid {}",
                                      liar, ::getpid())))
      << (log.empty() ? "no log line" : log[0]);
  ::close(go[0]);
  ::close(go[1]);
  ::close(told[0]);
}

TEST(FdChannelChecks, ANameHeldByAnotherProcessGetsNothingFromTheSender) {
  const BootstrapSecret s = fresh_secret();
  int ready[2], told[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(told), 0);
  const pid_t squatter = ::fork();
  ASSERT_GE(squatter, 0);
  if (squatter == 0) {  // takes rank 1's name before rank 1 listens, then reports every byte and descriptor it gets
    socklen_t length = 0;
    const sockaddr_un a = abstract_address(fd_channel_name(s, 1), &length);
    const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (::bind(listener, reinterpret_cast<const sockaddr*>(&a), length) != 0 || ::listen(listener, 4) != 0) ::_exit(2);
    if (::write(ready[1], "r", 1) != 1) ::_exit(3);
    pollfd p{listener, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) ::_exit(4);
    const int socket = ::accept(listener, nullptr, nullptr);
    set_deadline(socket, std::chrono::steady_clock::now() + std::chrono::seconds(10));
    std::uint64_t got[2] = {0, 0};  // bytes, descriptors
    for (;;) {
      char data[4096];
      char control[CMSG_SPACE(64 * sizeof(int))];
      iovec io{data, sizeof data};
      msghdr m{};
      m.msg_iov = &io;
      m.msg_iovlen = 1;
      m.msg_control = control;
      m.msg_controllen = sizeof control;
      const ssize_t n = ::recvmsg(socket, &m, 0);
      if (n <= 0) break;
      got[0] += static_cast<std::uint64_t>(n);
      for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_type == SCM_RIGHTS) got[1] += (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    }
    ::_exit(::write(told[1], got, sizeof got) == sizeof got ? 0 : 5);
  }
  ::close(ready[1]);
  ::close(told[1]);
  ASSERT_EQ(read_byte(ready[0]), 'r');
  // The real rank 1 (recorded as this process) cannot listen on its name while the squatter holds it...
  const std::vector<pid_t> pids = this_process(2);
  std::unique_ptr<FdChannel> one;
  const Status taken = FdChannel::listen(s, 1, pids, quick(), &one);
  EXPECT_FALSE(taken.ok());
  EXPECT_THAT(taken.message(), HasSubstr("cannot listen for descriptors"));
  // ...and rank 0 sends it nothing: no payload, no descriptor.
  auto zero = listen(s, 0, pids, quick());
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const int fds[] = {p[1]};
  const Status sent = zero->send(1, 3, fds, "for rank 1 only");
  EXPECT_EQ(sent.code(), StatusCode::remote_error);
  EXPECT_THAT(sent.message(), HasSubstr(fmt::format("rank 0: the descriptor endpoint of rank 1 is held by pid {} (uid "
                                                    "{}), not by pid {} (uid {}) that the bootstrap recorded for it",
                                                    squatter, ::getuid(), ::getpid(), ::getuid())));
  EXPECT_THAT(sent.message(), HasSubstr("must share one pid namespace"));
  EXPECT_THAT(sent.message(), HasSubstr("nothing was sent to it"));
  std::uint64_t got[2] = {99, 99};
  pollfd wait{told[0], POLLIN, 0};
  ASSERT_EQ(::poll(&wait, 1, 10000), 1);
  ASSERT_EQ(::read(told[0], got, sizeof got), static_cast<ssize_t>(sizeof got));
  EXPECT_EQ(got[0], 0u) << "bytes the squatter received";
  EXPECT_EQ(got[1], 0u) << "descriptors the squatter received";
  EXPECT_EQ(wait_child(squatter), 0);
  for (int fd : {p[0], p[1], ready[0], told[0]}) ::close(fd);
}

TEST(FdChannelChecks, AnotherUserIsRefusedOnBothEnds) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to start a process of another user (peer_is is checked alone in "
                                       "FdChannel.OnlyOurOwnUserMayHandUsDescriptors)";
  constexpr uid_t kNobody = 65534;
  const BootstrapSecret s = fresh_secret();
  std::vector<std::string> log;
  int go[2], told[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(told), 0);
  const pid_t other = ::fork();
  ASSERT_GE(other, 0);
  if (other == 0) {  // recorded as rank 2, but runs as another user: sends to rank 0, then holds rank 2's name
    if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(2);
    if (read_byte(go[0]) != 'g') ::_exit(3);
    const int socket = connect_to(fd_channel_name(s, 0));
    if (socket < 0 || ::write(told[1], "s", 1) != 1) ::_exit(4);
    const char answer = send_claiming(socket, 2, 5, "from another user", 0);
    if (::write(told[1], &answer, 1) != 1) ::_exit(5);
    socklen_t length = 0;
    const sockaddr_un a = abstract_address(fd_channel_name(s, 2), &length);
    const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (::bind(listener, reinterpret_cast<const sockaddr*>(&a), length) != 0 || ::listen(listener, 4) != 0) ::_exit(6);
    if (::write(told[1], "l", 1) != 1) ::_exit(7);
    (void)read_byte(go[0]);  // holds the name until told
    ::_exit(0);
  }
  ::close(told[1]);
  const std::vector<pid_t> pids{::getpid(), ::getpid(), other};
  auto zero = listen(s, 0, pids, quick(&log)), one = listen(s, 1, pids, quick());
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ASSERT_EQ(read_byte(told[0]), 's');  // its connection is queued before the real one
  std::thread real([&] { EXPECT_TRUE(one->send(0, 5, {}, "real").ok()); });
  FdMessage m;
  const Status st = zero->receive(1, 5, &m);
  real.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(read_byte(told[0]), 'n');
  EXPECT_TRUE(logged(log, fmt::format("refused a descriptor connection from pid {} (uid {}, not ours: 0)", other,
                                      kNobody)))
      << (log.empty() ? "no log line" : log[0]);
  // Its pid is the one recorded for rank 2, its user is not ours: the sender refuses it too.
  ASSERT_EQ(read_byte(told[0]), 'l');
  const Status sent = zero->send(2, 6, {}, "for rank 2");
  EXPECT_THAT(sent.message(), HasSubstr(fmt::format("is held by pid {} (uid {}), not by pid {} (uid 0)", other,
                                                    kNobody, other)));
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  EXPECT_EQ(wait_child(other), 0);
  for (int fd : {go[0], go[1], told[0]}) ::close(fd);
}

// A flood of bad connections cannot fill the log: the first 16 refusals are logged, then one at each power of two.
TEST(FdChannelChecks, RefusalsAreLoggedOneByOneThenAtPowersOfTwo) {
  const BootstrapSecret s = fresh_secret();
  std::vector<std::string> log;
  auto zero = listen(s, 0, this_process(2), quick(&log)), one = listen(s, 1, this_process(2), quick());
  constexpr int kFlood = 40;
  std::thread flood([&] {
    for (int k = 0; k < kFlood; ++k) {
      const int fd = connect_to(fd_channel_name(s, 0));
      ASSERT_GE(fd, 0);
      const char junk[32] = "not a header";
      (void)::write(fd, junk, sizeof junk);
      ::close(fd);
    }
    EXPECT_TRUE(one->send(0, 5, {}, "real").ok());
  });
  FdMessage m;
  const Status st = zero->receive(1, 5, &m);
  flood.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(m.payload, "real");
  EXPECT_EQ(zero->refused(), static_cast<std::uint64_t>(kFlood));
  ASSERT_EQ(log.size(), 17u);  // 16, then the 32nd
  EXPECT_THAT(log[15], HasSubstr("refused a malformed descriptor message"));
  EXPECT_THAT(log[16], HasSubstr("(32 descriptor connections refused so far; only every power of two is logged now)"));
}

TEST(FdChannelChecks, TheChannelIsGivenEveryRanksPidAndItsOwn) {
  const BootstrapSecret s = fresh_secret();
  std::unique_ptr<FdChannel> c;
  const Status short_list = FdChannel::listen(s, 2, this_process(2), quick(), &c);
  EXPECT_THAT(short_list.message(), HasSubstr("rank 2: the descriptor channel was given the pids of 2 ranks"));
  const Status not_us = FdChannel::listen(s, 0, {::getpid() + 1, ::getpid()}, quick(), &c);
  EXPECT_THAT(not_us.message(), HasSubstr(fmt::format("the bootstrap recorded pid {} for this rank, but this process "
                                                      "is pid {}",
                                                      ::getpid() + 1, ::getpid())));
  // A rank of another host (pid 0) is never a peer: nothing is sent to it, no wait for it.
  auto zero = listen(s, 0, {::getpid(), 0}, quick());
  EXPECT_THAT(zero->send(1, 1, {}, "x").message(), HasSubstr("rank 1 has no process on this host"));
  FdMessage m;
  EXPECT_THAT(zero->receive(1, 1, &m).message(), HasSubstr("rank 1 has no process on this host"));
  EXPECT_TRUE(peer_is({42, 1000}, 42, 1000));
  EXPECT_FALSE(peer_is({43, 1000}, 42, 1000));
  EXPECT_FALSE(peer_is({42, 1001}, 42, 1000));
  EXPECT_FALSE(peer_is({0, 1000}, 0, 1000));  // pid 0 (another pid namespace) never matches, not even "no process"
}

// A peer that keeps sending messages nobody waits for: each kept until the bound, then a precise error.
TEST(FdChannelChecks, MessagesKeptForLaterAreBoundedInNumber) {
  const BootstrapSecret s = fresh_secret();
  const auto o = quick(nullptr, std::chrono::milliseconds(60000));
  auto zero = listen(s, 0, this_process(2), o), one = listen(s, 1, this_process(2), o);
  std::size_t delivered = 0;
  Status stopped;
  std::thread flood([&] {
    for (std::size_t k = 0; k <= FdChannel::kMaxPendingMessages; ++k) {
      if (stopped = one->send(0, 99, {}, ""); !stopped.ok()) return;
      ++delivered;
    }
  });
  FdMessage m;
  const Status st = zero->receive(1, 5, &m);
  flood.join();
  EXPECT_EQ(st.code(), StatusCode::remote_error);
  EXPECT_THAT(st.message(), HasSubstr("rank 0: rank 1 sent a message (tag 99, 0 bytes, 0 descriptors) while this "
                                      "process waits for rank 1's (tag 5), and the channel already keeps 1024 "
                                      "messages (0 bytes, 0 descriptors) for later receives"));
  EXPECT_THAT(st.message(), HasSubstr("the processes are out of step"));
  EXPECT_EQ(delivered, FdChannel::kMaxPendingMessages);
  EXPECT_THAT(stopped.message(), HasSubstr("rank 1: rank 0 did not confirm"));
  EXPECT_EQ(zero->pending(), FdChannel::kMaxPendingMessages);
  // What was kept is still there for its receives.
  ASSERT_TRUE(zero->receive(1, 99, &m).ok());
  EXPECT_EQ(zero->pending(), FdChannel::kMaxPendingMessages - 1);
}

TEST(FdChannelChecks, MessagesKeptForLaterAreBoundedInBytes) {
  const BootstrapSecret s = fresh_secret();
  const auto o = quick(nullptr, std::chrono::milliseconds(60000));
  auto zero = listen(s, 0, this_process(2), o), one = listen(s, 1, this_process(2), o);
  const std::string largest(kFdWireMaxPayload, 'x');
  std::size_t delivered = 0;
  std::thread flood([&] {
    for (int k = 0; k < 5 && one->send(0, 99, {}, largest).ok(); ++k) ++delivered;
  });
  FdMessage m;
  const Status st = zero->receive(1, 5, &m);
  flood.join();
  EXPECT_THAT(st.message(), HasSubstr("already keeps 4 messages (67108864 bytes, 0 descriptors)"));
  EXPECT_EQ(delivered, 4u);
}

TEST(FdChannelChecks, MessagesKeptForLaterAreBoundedInDescriptors) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlim_t needed = 2 * FdChannel::kMaxPendingDescriptors + 512;
  if (limit.rlim_max < needed) GTEST_SKIP() << "needs " << needed << " open descriptors, the hard limit is lower";
  const rlimit before = limit;
  limit.rlim_cur = std::max(limit.rlim_cur, needed);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  {
    const BootstrapSecret s = fresh_secret();
    const auto o = quick(nullptr, std::chrono::milliseconds(60000));
    auto zero = listen(s, 0, this_process(2), o), one = listen(s, 1, this_process(2), o);
    std::vector<int> fds;
    for (int k = 0; k < 200; ++k) fds.push_back(::dup(0));
    std::size_t delivered = 0;
    std::thread flood([&] {
      for (int k = 0; k < 30 && one->send(0, 99, fds, "").ok(); ++k) ++delivered;
    });
    FdMessage m;
    const Status st = zero->receive(1, 5, &m);
    flood.join();
    EXPECT_THAT(st.message(), HasSubstr("(tag 99, 0 bytes, 200 descriptors)"));
    EXPECT_THAT(st.message(), HasSubstr("already keeps 20 messages (0 bytes, 4000 descriptors)"));
    EXPECT_EQ(delivered, 20u);
    for (int fd : fds) ::close(fd);
  }
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);
}

}  // namespace
}  // namespace canopy
