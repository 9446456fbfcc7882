// libFuzzer target for the bootstrap root's server (runtime/transport/bootstrap/bootstrap_root.hpp, root_admission.cpp)
// driven over loopback sockets, as strangers on the network and ranks would. Two roots run in the process:
//   - the strangers' root, whose secret no input can know: started once, it takes every connection of every input
//     but those below, and lives on across inputs; every 256 inputs a real 1-rank join must succeed on it (which ends
//     it: a new one starts);
//   - the insiders' root: a connection whose flags ask for it is sent there, after that root's real AUTH, so that its
//     bytes reach the HELLO and the group's rules; that root is replaced after every input that used it.
// Each input is split into at most 8 connections: a flags byte (bit 0: an insider; bit 1: close with a reset instead
// of a FIN), a u16 length (little-endian), then that many bytes (fewer where the input ends). All connections are
// opened, their bytes written in two halves, interleaved, then closed. After each input a probe checks that the
// strangers' root still accepts and closes a stranger's garbage at once; every 16 inputs, that the process's sockets
// come back to the roots' two listeners (the roots close every connection they drop). A crash,
// a sanitizer report, a check that fails or an answer that does not come within 5 s (a hang) ends the run.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/transport/bootstrap/bootstrap.hpp"
#include "runtime/transport/bootstrap/bootstrap_root.hpp"
#include "runtime/transport/bootstrap/frame.hpp"

namespace {
using namespace canopy;
using Clock = std::chrono::steady_clock;

constexpr auto kAnswer = std::chrono::seconds(5);  // what "at once" may take on a loaded machine, sanitizers on
constexpr int kJoinEvery = 256;
constexpr int kDescriptorsEvery = 16;

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "bootstrap_root_fuzz: %s\n", what);
  __builtin_trap();
}

Logger quiet_logger() {
  Logger logger(LogLevel::warn, ~0u);
  logger.set_sink([](std::string_view) {});
  return logger;
}

BootstrapSettings settings() {
  return {std::chrono::seconds(60), std::chrono::milliseconds(500), CANOPY_VERSION, quiet_logger()};
}

struct Root {
  BootstrapSecret secret{};
  std::unique_ptr<BootstrapRoot> root;
};

Root start_root() {
  Root r;
  check(random_secret(&r.secret).ok(), "no random secret");
  const Status s = BootstrapRoot::start(ipv4_loopback(), r.secret, settings(), &r.root);
  check(s.ok(), "the root cannot listen on 127.0.0.1");
  return r;
}

int connect_to(const SocketAddress& root) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  check(fd >= 0, "no socket");
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(root.port);
  std::memcpy(&to.sin_addr, root.bytes.data(), 4);
  int failed = ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  if (failed != 0 && errno == EINTR) {  // libFuzzer's timer signal: the connection goes on; wait for its outcome
    pollfd p{fd, POLLOUT, 0};
    while (::poll(&p, 1, 5000) < 0 && errno == EINTR) {
    }
    int error = 0;
    socklen_t size = sizeof error;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
    failed = error != 0 || !(p.revents & POLLOUT);
    errno = error ? error : ETIMEDOUT;
  }
  if (failed) {
    std::fprintf(stderr, "bootstrap_root_fuzz: connecting to the root at %s: %s\n", to_string(root).c_str(),
                 std::strerror(errno));
    check(false, "a root does not accept");
  }
  return fd;
}

void send_all(int fd, std::string_view bytes) {  // never blocks: what the socket cannot take now is dropped
  if (!bytes.empty()) (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void close_with_reset(int fd) {
  const linger abort{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  ::close(fd);
}

// Whether the root closed `fd` (end of file or reset) within kAnswer; bytes it sent first are read and dropped.
bool closed_by_root(int fd) {
  const auto until = Clock::now() + kAnswer;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char scratch[512];
    const ssize_t got = ::recv(fd, scratch, sizeof scratch, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
  }
}

// The process's open sockets (libFuzzer and the sanitizers' symbolizer keep pipes and files of their own open).
std::size_t open_sockets() {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ignored;
    n += std::filesystem::read_symlink(entry.path(), ignored).string().starts_with("socket:");
  }
  return n;
}

struct Stream {
  bool insider = false;
  bool reset = false;
  std::string_view bytes;
};

std::vector<Stream> split(std::string_view input) {
  std::vector<Stream> streams;
  while (!input.empty() && streams.size() < 8) {
    Stream s;
    const auto flags = static_cast<std::uint8_t>(input[0]);
    s.insider = flags & 1, s.reset = flags & 2;
    input.remove_prefix(1);
    std::size_t length = input.size();
    if (input.size() >= 2) {
      length = static_cast<std::uint8_t>(input[0]) | static_cast<std::size_t>(static_cast<std::uint8_t>(input[1])) << 8;
      input.remove_prefix(2);
    }
    s.bytes = input.substr(0, length);
    input.remove_prefix(s.bytes.size());
    streams.push_back(s);
  }
  return streams;
}

struct State {
  Root strangers = start_root();
  Root insiders = start_root();
  std::size_t baseline = open_sockets();  // both roots idle: their listeners
  long inputs = 0;
};

// A real rank joins the strangers' root as rank 0 of 1: the root has survived every input so far. It ends; a new one
// starts.
void join_and_replace(State& state) {
  UniqueIdContents contents{state.strangers.root->address(), state.strangers.secret};
  BootstrapOptions options;
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(kAnswer);
  options.logger = quiet_logger();
  std::unique_ptr<Bootstrap> rank;
  check(Bootstrap::join(encode_unique_id(contents), 1, 0, "fuzz", &rank, options).ok(), "a real rank cannot join");
  check(rank->barrier().ok(), "a real rank's barrier fails");
  rank.reset();
  check(state.strangers.root->wait_finished(std::chrono::duration_cast<std::chrono::milliseconds>(kAnswer)),
        "the root does not end once its one rank left");
  state.strangers = start_root();
}

// Both roots idle: every socket the roots took for the inputs' connections is closed again.
void check_descriptors(const State& state) {
  const auto until = Clock::now() + kAnswer;
  while (open_sockets() > state.baseline && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the roots' threads close what they dropped
  if (open_sockets() > state.baseline) {
    std::fprintf(stderr, "bootstrap_root_fuzz: %zu sockets open, %zu with both roots idle:\n", open_sockets(),
                 state.baseline);
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
      std::error_code ignored;
      std::fprintf(stderr, "  %s -> %s\n", entry.path().filename().c_str(),
                   std::filesystem::read_symlink(entry.path(), ignored).c_str());
    }
  }
  check(open_sockets() <= state.baseline, "the roots hold sockets of connections that ended");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static State state;
  // A root nobody joined ends after its timeout (60 s), as it should: its successor takes the input.
  for (Root* root : {&state.strangers, &state.insiders})
    if (root->root->wait_finished(std::chrono::milliseconds(0))) *root = start_root();
  const std::vector<Stream> streams = split({reinterpret_cast<const char*>(data), size});
  bool insiders_used = false;
  std::vector<int> fds;
  for (const Stream& s : streams) {
    const Root& root = s.insider ? state.insiders : state.strangers;
    fds.push_back(connect_to(root.root->address()));
    if (s.insider) send_all(fds.back(), encode_frame(Auth{root.secret}));
    insiders_used = insiders_used || s.insider;
  }
  for (int half = 0; half < 2; ++half)
    for (std::size_t i = 0; i < streams.size(); ++i) {
      const std::string_view b = streams[i].bytes;
      send_all(fds[i], half == 0 ? b.substr(0, b.size() / 2) : b.substr(b.size() / 2));
    }
  for (std::size_t i = 0; i < streams.size(); ++i) streams[i].reset ? close_with_reset(fds[i]) : (void)::close(fds[i]);

  if (insiders_used) state.insiders = start_root();  // whatever its group became, the next input gets a fresh one
  const int probe = connect_to(state.strangers.root->address());
  send_all(probe, "not a bootstrap frame");
  check(closed_by_root(probe), "the root did not close a stranger's garbage");
  ::close(probe);
  if (++state.inputs % kDescriptorsEvery == 0) check_descriptors(state);
  if (state.inputs % kJoinEvery == 0) join_and_replace(state);
  return 0;
}
