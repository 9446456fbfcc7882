// JoinedTeardown: ncclCommDestroy and ncclCommAbort of handles that one process holds of one communicator joined
// across processes, several of them (mpirun -np 2 with nccl-tests -g 2 on four GPUs: a process holds two ranks of four,
// joined a handle each, and destroys them one after the other from one thread). Each handle's Communicator waits at
// its end until every member of its bootstrap group has come there (runtime/comm/communicator.cpp: no process takes
// another's exit for a failure), and this process's other handles are members: destroyed in turn on one thread, the
// first would wait for the second until CANOPY_BOOTSTRAP_TIMEOUT_S and fail. So a handle ended while others of its
// unique id still live here ends on a thread of its own, and the last to end ends on the caller's thread, then waits
// for the others' threads: ncclCommDestroy of the last handle returns once all have ended. The children of joined
// handles' splits count the same way, under a key derived from their parent's (joined_split.hpp: split_child_key).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace canopy::nccl_api {

class SharedComm;

class JoinedTeardown {
 public:
  using Id = std::array<unsigned char, 128>;
  // A handle of `id` is ready in this process.
  void joined(const Id& id);
  // Drops `shared` (the handle's last reference, usually): on a thread of its own while other handles of `id` live
  // here, else here, then waits for the threads of `id`'s earlier ends.
  void end(const Id& id, std::shared_ptr<SharedComm> shared);

 private:
  struct Live {
    int handles = 0;
    std::vector<std::thread> ending;
  };
  std::mutex mutex_;
  std::map<Id, Live> live_;
};

// The process's one instance: never destroyed, so threads still ending at exit (a handle never destroyed) are not
// joined by a destructor there.
JoinedTeardown& joined_teardown();

}  // namespace canopy::nccl_api
