// PeerMonitor: a thread that notices when another process of a multi-process communicator ends (killed, crashed or
// exited without leaving) and says who: its ranks, host and pid. Processes of one host are watched through pidfds
// (pidfd_open, poll), else by probing their pids every 100 ms; `check`, when given, runs as often and names any other
// reason to stop (a process that stopped calling: call_counters.hpp). The callback runs on the monitor's thread,
// once.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace canopy {

struct WatchedProcess {
  pid_t pid = 0;
  std::string what;  // "rank 1 (pid 4242 on host box)"
};

class PeerMonitor {
 public:
  PeerMonitor(std::vector<WatchedProcess> others, std::function<void(const std::string& why)> on_lost,
              std::function<std::string()> check = {});
  ~PeerMonitor();  // stops watching
  PeerMonitor(const PeerMonitor&) = delete;
  PeerMonitor& operator=(const PeerMonitor&) = delete;

 private:
  void loop();
  std::vector<WatchedProcess> others_;
  std::vector<int> pidfds_;  // per process: -1 where pidfd_open failed (probed instead)
  std::function<void(const std::string&)> on_lost_;
  std::function<std::string()> check_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace canopy
