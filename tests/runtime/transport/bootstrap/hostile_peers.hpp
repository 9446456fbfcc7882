// Strangers for the hostile-network tests: raw TCP connections to a bootstrap root (plain sockets, no asio: cheap
// enough to open hundreds) that never speak, claim huge bodies, drip bytes or carry wrong secrets, each remembered with
// when it connected and when the root closed it; and what a process spends meanwhile (CPU time and resident memory,
// from /proc), for this process or another.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/transport/bootstrap/bootstrap_root.hpp"
#include "runtime/transport/bootstrap/socket_address.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"
#include "tests/runtime/transport/bootstrap/bootstrap_test_util.hpp"

namespace canopy::testing {

using Clock = std::chrono::steady_clock;

// What every hostile test asserts of the root's process over the attack: resident memory grows by less than this
// (a root that allocated what headers claim grows by gigabytes; by 1 MiB a connection, as version 1 did, by 200 MiB)
// and it spends less than this share of the wall time on CPU (a root that spun would spend all of one core).
constexpr long kMaxGrowthKib = 16 * 1024;
constexpr double kMaxCpuShare = 0.2;

// The connections the root's log says it dropped (strangers': rate-limited): a line each for the first ones of an
// interval, and a line "dropped N more connections in the last ..." for the rest. `lines` counts the lines.
inline int dropped_in_log(const LogLines& log, int* lines = nullptr) {
  int dropped = 0, count = 0;
  for (const std::string& line : log.matching("dropped ")) {
    const std::size_t more = line.find(" more connections in the last ");
    if (more != std::string::npos) {
      const std::size_t number = line.rfind("dropped ", more) + 8;
      dropped += std::stoi(line.substr(number, more - number));
      ++count;
    } else if (line.find("dropped a connection from") != std::string::npos) {
      ++dropped;
      ++count;
    }
  }
  if (lines) *lines = count;
  return dropped;
}

// The root a unique id names (IPv4: the tests' roots listen on 127.0.0.1).
inline SocketAddress root_address(const UniqueId& id) {
  UniqueIdContents c;
  EXPECT_TRUE(decode_unique_id(id, &c).ok());
  return c.root;
}

// A blocking TCP connection to `root`; -1 with errno set when it fails (ECONNREFUSED: nothing listens).
inline int connect_to(const SocketAddress& root) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(root.port);
  std::memcpy(&to.sin_addr, root.bytes.data(), 4);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

class Strangers {
 public:
  explicit Strangers(const SocketAddress& root) : root_(root) {}
  ~Strangers() {
    for (const Connection& c : connections_)
      if (c.fd >= 0) ::close(c.fd);
  }
  Strangers(const Strangers&) = delete;
  Strangers& operator=(const Strangers&) = delete;

  // Opens `n` more connections; each connect returns once the kernel has queued it for the root to accept.
  void connect(int n) {
    for (int i = 0; i < n; ++i) {
      const Clock::time_point started = Clock::now();
      const int fd = connect_to(root_);
      ASSERT_GE(fd, 0) << "connection " << connections_.size() << ": " << std::strerror(errno);
      connections_.push_back({fd, started, Clock::now(), std::nullopt});
    }
  }
  std::size_t size() const { return connections_.size(); }

  // Sends `bytes` on connection `i`; false when the root has closed it (nothing is sent then).
  bool send(std::size_t i, std::string_view bytes) {
    Connection& c = connections_.at(i);
    if (c.fd < 0) return false;
    const ssize_t sent = ::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent < 0) note_closed(c);
    return sent == static_cast<ssize_t>(bytes.size());
  }

  // Waits until the root has closed at least `count` of the connections, or until `deadline`; how many it closed.
  std::size_t wait_closed(std::size_t count, Clock::time_point deadline) {
    while (closed() < count) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) break;
      poll_once(static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
    }
    poll_once(0);
    return closed();
  }
  std::size_t closed() const {
    std::size_t n = 0;
    for (const Connection& c : connections_) n += c.closed.has_value();
    return n;
  }
  Clock::time_point connected_at(std::size_t i) const { return connections_.at(i).connected; }
  std::optional<Clock::time_point> closed_at(std::size_t i) const { return connections_.at(i).closed; }
  // How long connection `i` stayed open (it must have been closed), from when its connect returned: at most how long
  // the root held it, plus how late this side saw the close. Use it for upper bounds.
  std::chrono::milliseconds held(std::size_t i) const { return closed_since(i, connections_.at(i).connected); }
  // The same from before its connect began, which the root cannot have accepted it before (on a loaded machine this
  // side may see its connect return after the root accepted it): at least how long the root held it. Use it for
  // lower bounds, such as "not closed before its deadline".
  std::chrono::milliseconds held_since_connecting(std::size_t i) const {
    return closed_since(i, connections_.at(i).started);
  }

 private:
  struct Connection {
    int fd;
    Clock::time_point started;  // before connect
    Clock::time_point connected;
    std::optional<Clock::time_point> closed;  // when this side saw the root close it
  };

  std::chrono::milliseconds closed_since(std::size_t i, Clock::time_point from) const {
    const Connection& c = connections_.at(i);
    EXPECT_TRUE(c.closed.has_value()) << "connection " << i << " is still open";
    return std::chrono::duration_cast<std::chrono::milliseconds>(c.closed.value_or(from) - from);
  }

  void note_closed(Connection& c) {
    c.closed = Clock::now();
    ::close(c.fd);
    c.fd = -1;
  }

  // One poll over the open connections; those the root closed (end of file, reset) are noted and closed here. Bytes
  // the root sent are read and dropped.
  void poll_once(int timeout_ms) {
    std::vector<pollfd> fds;
    std::vector<Connection*> of;
    for (Connection& c : connections_)
      if (c.fd >= 0) fds.push_back({c.fd, POLLIN | POLLRDHUP, 0}), of.push_back(&c);
    if (fds.empty() || ::poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      char scratch[256];
      const ssize_t got = ::recv(of[i]->fd, scratch, sizeof scratch, MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || (fds[i].revents & (POLLHUP | POLLERR)))
        note_closed(*of[i]);
    }
  }

  SocketAddress root_;
  std::vector<Connection> connections_;
};

// What a process has spent: CPU time (user and system, all threads) and resident memory.
struct ProcessUse {
  double cpu_s = 0;
  long rss_kib = 0;
  Clock::time_point at;
};

// VmRSS of /proc/PID/status, in KiB.
inline long resident_kib(const std::string& pid) {
  std::ifstream status("/proc/" + pid + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  ADD_FAILURE() << "no VmRSS in /proc/" << pid << "/status";
  return 0;
}

// This process: CLOCK_PROCESS_CPUTIME_ID; another (pid > 0): utime + stime of /proc/PID/stat (in clock ticks).
inline ProcessUse process_use(pid_t pid = 0) {
  ProcessUse use;
  use.at = Clock::now();
  if (pid == 0) {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    use.cpu_s = static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
    use.rss_kib = resident_kib("self");
    return use;
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));  // field 3 (state) onwards
  std::vector<std::string> f{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
  EXPECT_GT(f.size(), 12u) << text;
  if (f.size() > 12) use.cpu_s = static_cast<double>(std::stol(f[11]) + std::stol(f[12])) / sysconf(_SC_CLK_TCK);
  use.rss_kib = resident_kib(std::to_string(pid));
  return use;
}

// CPU time over wall time between two readings.
inline double cpu_share(const ProcessUse& from, const ProcessUse& to) {
  const double wall = std::chrono::duration<double>(to.at - from.at).count();
  return wall > 0 ? (to.cpu_s - from.cpu_s) / wall : 0;
}

// One line on stdout with what a test measured, for the record (the assertions are the tests').
inline void print_measured(const std::string& what, const ProcessUse& before, const ProcessUse& attack_over,
                           long rss_after_kib, std::chrono::duration<double> join) {
  std::printf("[ measured ] %s: CPU %.3f s in %.2f s (%.1f%%), resident memory %+ld KiB, the ranks joined in %.3f s\n",
              what.c_str(), attack_over.cpu_s - before.cpu_s,
              std::chrono::duration<double>(attack_over.at - before.at).count(), 100 * cpu_share(before, attack_over),
              rss_after_kib - before.rss_kib, join.count());
}

}  // namespace canopy::testing
