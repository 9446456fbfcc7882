// What the FdChannel tests share: a fresh job secret, quick options with a log that collects lines, endpoints opened
// with the pids a test states, the count of open descriptors, and a raw connection to an endpoint by name (for the
// tests that play a process which is not one of the job's).
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runtime/transport/ipc/fd_channel.hpp"
#include "runtime/transport/ipc/fd_channel_wire.hpp"

namespace canopy {

// A fresh job's secret (from the OS, as make_unique_id draws it), so tests running at once never share endpoints.
inline BootstrapSecret fresh_secret() {
  BootstrapSecret s{};
  EXPECT_TRUE(random_secret(&s).ok());
  return s;
}

// Options with a 2 s timeout (or `timeout`) whose warnings land in `log` where given.
inline FdChannel::Options quick(std::vector<std::string>* log = nullptr,
                                std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
  FdChannel::Options o;
  o.timeout = timeout;
  o.log = Logger(LogLevel::warn, ~0u);
  if (log) o.log.set_sink([log](std::string_view line) { log->emplace_back(line); });
  return o;
}

// Every rank of `ranks` played by this process (threads standing for processes).
inline std::vector<pid_t> this_process(int ranks) { return std::vector<pid_t>(ranks, ::getpid()); }

inline std::unique_ptr<FdChannel> listen(const BootstrapSecret& s, int rank, const std::vector<pid_t>& pids,
                                         const FdChannel::Options& o) {
  std::unique_ptr<FdChannel> c;
  const Status st = FdChannel::listen(s, rank, pids, o, &c);
  EXPECT_TRUE(st.ok()) << st.message();
  return c;
}

inline int open_fds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// A socket connected to abstract name `name`, or -1.
inline int connect_to(const std::string& name) {
  socklen_t length = 0;
  const sockaddr_un a = abstract_address(name, &length);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&a), length) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

// Whether any of `lines` holds `text`.
inline bool logged(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace canopy
