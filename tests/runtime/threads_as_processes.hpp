// Threads standing for the processes of a communicator in CPU tests: each gets its own FdChannel endpoint (one
// secret, every rank's expected pid this process's), and all call a sharing step together, as processes do at the
// join (CallCounters::share, SharedRings::share).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <vector>

#include "runtime/transport/ipc/fd_channel.hpp"

namespace canopy {

// `share(channel, p, processes, &out[p])` for every p at once; each failure is a test failure. The results, per p.
template <typename T, typename Share>
std::vector<std::unique_ptr<T>> share_among_threads(int processes, Share share) {
  BootstrapSecret secret{};
  EXPECT_TRUE(random_secret(&secret).ok());
  FdChannel::Options o;
  o.timeout = std::chrono::milliseconds(5000);
  std::vector<std::unique_ptr<FdChannel>> channels(processes);
  const std::vector<pid_t> pids(processes, ::getpid());  // every "process" is this one
  for (int p = 0; p < processes; ++p) EXPECT_TRUE(FdChannel::listen(secret, p, pids, o, &channels[p]).ok());
  std::vector<std::future<Status>> shared;
  std::vector<std::unique_ptr<T>> out(processes);
  for (int p = 0; p < processes; ++p)
    shared.push_back(std::async(std::launch::async, [&, p] { return share(*channels[p], p, processes, &out[p]); }));
  for (auto& f : shared) {
    const Status s = f.get();
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return out;
}

}  // namespace canopy
