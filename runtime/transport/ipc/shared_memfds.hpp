// SharedMemfds: host memory every process of a communicator shares with the others. Each process makes `bytes` in a
// memfd of its own (zeroed, sealed against shrinking and growing), passes it to the others over the FdChannel in one
// exchange, and maps every process's: its own for reading and writing, the others' for reading, and for writing too
// where asked. A received memfd is mapped only once fstat and its seals show it holds `bytes` for good (a shorter
// file would raise SIGBUS at the first touch past its end): else share fails naming the process and both sizes.
// How CallCounters (a page each, which the others only read), SharedRings (a ring each, which every process writes)
// and ProcessEngines' boards share host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"

namespace canopy {

// Whether received descriptor `fd` may be mapped for `bytes`: a regular file of at least `bytes`, sealed against
// shrinking. `whose` names it in the error ("the host ring of process 1").
Status check_received_memfd(int fd, std::size_t bytes, const std::string& whose);

class SharedMemfds {
 public:
  SharedMemfds() = default;
  ~SharedMemfds();  // unmaps
  SharedMemfds(const SharedMemfds&) = delete;
  SharedMemfds& operator=(const SharedMemfds&) = delete;

  // Every process calls it together (one step on `channel`, tagged `tag`): this process is `process` of
  // `processes`; `what` names the memory in errors ("the call counters' page").
  Status share(FdChannel& channel, std::uint32_t tag, const char* what, int process, int processes, std::size_t bytes,
               bool others_writable);

  void* at(int process) const { return mapped_[process]; }  // process `process`'s memory, mapped here
  int processes() const { return static_cast<int>(mapped_.size()); }

 private:
  std::vector<void*> mapped_;  // per process (null where not mapped)
  std::size_t bytes_ = 0;
};

}  // namespace canopy
