// SharedMemfds: host memory every process of a communicator shares with the others. Each process makes `bytes` in a
// memfd of its own (zeroed), passes it to the others over the FdChannel in one exchange, and maps every process's:
// its own for reading and writing, the others' for reading, and for writing too where asked. How CallCounters (a page
// each, which the others only read) and SharedRings (a ring each, which every process writes) share host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"

namespace canopy {

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
