// The live SharedComms and the exit handler that stops their watchers (exit_guard.hpp).
#include "nccl/comm/exit_guard.hpp"

#include <cstdlib>
#include <mutex>
#include <set>

#include "nccl/comm/shared_comm.hpp"

namespace canopy::nccl_api {

namespace {

struct Tracked {
  std::mutex mutex;
  std::set<SharedComm*> comms;
};

Tracked& tracked() {
  static auto* t = new Tracked();  // never destroyed: the exit handler runs among static destructors
  return *t;
}

void leave_all() {
  Tracked& t = tracked();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (SharedComm* c : t.comms) c->leave_at_exit();
}

}  // namespace

void track_at_exit(SharedComm* comm) {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(leave_all); });
  Tracked& t = tracked();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.comms.insert(comm);
}

void untrack_at_exit(SharedComm* comm) {
  Tracked& t = tracked();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.comms.erase(comm);
}

int tracked_at_exit() {
  Tracked& t = tracked();
  std::lock_guard<std::mutex> lock(t.mutex);
  return static_cast<int>(t.comms.size());
}

}  // namespace canopy::nccl_api
