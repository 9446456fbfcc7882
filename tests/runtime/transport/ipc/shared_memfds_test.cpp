// SharedMemfds without a GPU: two "processes" (threads with their own FdChannel endpoints) map each other's memfds
// and see each other's writes; a peer that sends a memfd shorter than the size to map, one not sealed against
// shrinking, or a descriptor that is no file, makes share fail naming the process and the sizes, never SIGBUS (the
// test running to its end shows it); a memfd this side makes is sealed, so the check holds for as long as it is
// mapped.
#include "runtime/transport/ipc/shared_memfds.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <future>

#include "tests/runtime/transport/ipc/fd_channel_testing.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

constexpr std::uint32_t kTag = 77;
constexpr std::size_t kBytes = 65536;

// Process 0 shares kBytes through SharedMemfds while process 1 answers with the descriptor `make_peer_fd` gives (it
// maps nothing). Process 0's result; `memory` is its SharedMemfds.
Status share_with_peer(SharedMemfds* memory, const std::function<int()>& make_peer_fd) {
  const BootstrapSecret s = fresh_secret();
  auto zero = listen(s, 0, this_process(2), quick()), one = listen(s, 1, this_process(2), quick());
  std::future<Status> peer = std::async(std::launch::async, [&] {
    const int fd = make_peer_fd();
    const int to[] = {0};
    const Status st = one->exchange(kTag, std::span<const int>(&fd, 1), "the host ring", to, to,
                                    [](int, FdMessage&) { return Status(); });
    ::close(fd);
    return st;
  });
  const Status st = memory->share(*zero, kTag, "the host ring", 0, 2, kBytes, true);
  (void)peer.get();  // the peer's side ends either way (its message was taken before process 0 checked it)
  return st;
}

int memfd_of(std::size_t bytes, bool sealed) {
  const int fd = ::memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(bytes)), 0);
  if (sealed) {
    EXPECT_EQ(::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  }
  return fd;
}

TEST(SharedMemfds, TwoProcessesSeeEachOthersWrites) {
  const BootstrapSecret s = fresh_secret();
  auto zero = listen(s, 0, this_process(2), quick()), one = listen(s, 1, this_process(2), quick());
  SharedMemfds a, b;
  std::future<Status> other =
      std::async(std::launch::async, [&] { return b.share(*one, kTag, "the host ring", 1, 2, kBytes, true); });
  const Status st = a.share(*zero, kTag, "the host ring", 0, 2, kBytes, true);
  ASSERT_TRUE(st.ok()) << st.message();
  const Status theirs = other.get();
  ASSERT_TRUE(theirs.ok()) << theirs.message();
  std::strcpy(static_cast<char*>(a.at(0)) + kBytes - 8, "zero");
  std::strcpy(static_cast<char*>(b.at(1)) + kBytes - 8, "one");
  EXPECT_STREQ(static_cast<char*>(b.at(0)) + kBytes - 8, "zero");  // the last bytes too: the whole size is mapped
  EXPECT_STREQ(static_cast<char*>(a.at(1)) + kBytes - 8, "one");
}

TEST(SharedMemfds, AShortMemfdIsAnErrorNotASigbus) {
  SharedMemfds memory;
  const Status st = share_with_peer(&memory, [] { return memfd_of(4096, true); });
  EXPECT_EQ(st.code(), StatusCode::remote_error);
  EXPECT_THAT(st.message(), HasSubstr("the host ring of process 1 is 4096 bytes, 65536 expected"));
  EXPECT_EQ(memory.at(1), nullptr);  // never mapped
}

TEST(SharedMemfds, AMemfdNotSealedAgainstShrinkingIsRefused) {
  SharedMemfds memory;
  const Status st = share_with_peer(&memory, [] { return memfd_of(kBytes, false); });
  EXPECT_THAT(st.message(), HasSubstr("the host ring of process 1 is not sealed against shrinking"));
  EXPECT_EQ(memory.at(1), nullptr);
}

TEST(SharedMemfds, ADescriptorThatIsNoFileIsRefused) {
  SharedMemfds memory;
  int kept = -1;
  const Status st = share_with_peer(&memory, [&] {
    int p[2];
    EXPECT_EQ(::pipe(p), 0);
    kept = p[0];
    return p[1];
  });
  ::close(kept);
  EXPECT_THAT(st.message(), HasSubstr("the host ring of process 1 is not a memory file"));
}

TEST(SharedMemfds, TheMemfdsMadeHereAreSealedAtTheirSize) {
  // What process 1 receives from a real SharedMemfds passes the check, and cannot be cut short afterwards.
  const BootstrapSecret s = fresh_secret();
  auto zero = listen(s, 0, this_process(2), quick()), one = listen(s, 1, this_process(2), quick());
  SharedMemfds memory;
  std::future<Status> shared =
      std::async(std::launch::async, [&] { return memory.share(*zero, kTag, "the host ring", 0, 2, kBytes, true); });
  FdMessage m;
  ASSERT_TRUE(one->receive(0, kTag, &m).ok());
  ASSERT_EQ(m.fds.size(), 1u);
  EXPECT_TRUE(check_received_memfd(m.fds[0].get(), kBytes, "process 0's").ok());
  EXPECT_NE(::ftruncate(m.fds[0].get(), 4096), 0);
  const int back = memfd_of(kBytes, true);
  EXPECT_TRUE(one->send(0, kTag, std::span<const int>(&back, 1), "the host ring").ok());
  ::close(back);
  const Status st = shared.get();
  EXPECT_TRUE(st.ok()) << st.message();
}

}  // namespace
}  // namespace canopy
