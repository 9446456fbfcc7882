// PeerMonitor through pidfds and poll(2), or kill(pid, 0) probes (see peer_monitor.hpp).
#include "runtime/processes/peer_monitor.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace canopy {

namespace {

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

bool gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

PeerMonitor::PeerMonitor(std::vector<WatchedProcess> others, std::function<void(const std::string&)> on_lost,
                         std::function<std::string()> check)
    : others_(std::move(others)), on_lost_(std::move(on_lost)), check_(std::move(check)) {
  for (const WatchedProcess& p : others_) pidfds_.push_back(open_pidfd(p.pid));
  thread_ = std::thread([this] { loop(); });
}

PeerMonitor::~PeerMonitor() {
  stop_ = true;
  thread_.join();
  for (int fd : pidfds_)
    if (fd >= 0) close(fd);
}

void PeerMonitor::loop() {
  std::vector<pollfd> fds;
  for (int fd : pidfds_) fds.push_back(pollfd{fd, POLLIN, 0});  // a negative fd is ignored by poll
  while (!stop_) {
    (void)poll(fds.data(), fds.size(), 100);
    for (std::size_t i = 0; i < others_.size(); ++i) {
      const bool ended = pidfds_[i] >= 0 ? (fds[i].revents & POLLIN) != 0 : gone(others_[i].pid);
      if (ended && !stop_) {
        // A process that failed its communicator before it ended (a refused call, then its teardown within the
        // period) said why in its page: that is the cause the others report, not its end.
        std::string why = check_ ? check_() : std::string();
        if (why.empty())
          why = fmt::format("{} ended while this communicator was in use (killed, crashed, or exited without "
                            "destroying its communicator)",
                            others_[i].what);
        on_lost_(why);
        return;
      }
    }
    if (check_ && !stop_)
      if (const std::string why = check_(); !why.empty()) {
        on_lost_(why);
        return;
      }
  }
}

}  // namespace canopy
