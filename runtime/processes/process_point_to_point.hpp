// ProcessPointToPoint: the transfers of a group of sends and receives that cross processes of one host
// (ProcessCallPath::send_recv), including processes sharing one GPU. The design, the simplest that needs no mapping of
// users' buffers: the sender's staging region + a copy by the receiver.
// - Each rank has a staging region of its own here (a StagingArea beside the collectives', in memory every process
//   maps through IpcPeerMemory), grown alike in every process to the group's largest need (PointToPointPlan).
// - Each process has a page of words in host memory every process maps (SharedMemfds), which side streams wait for
//   and write (StreamWords: cuStreamWaitValue32 / cuStreamWriteValue32 through the driver's entry points): `staged`,
//   the last group whose inputs this process copied into its staging regions, and `read`, the last group whose
//   transfers it copied out of the others'.
// - A group (numbered alike in every process) runs on one side stream of this process's GPU, forked from the callers'
//   streams of its ops across processes and joined back to them, in the order of PointToPointSchedule: wait until
//   each process that read this process's regions in an earlier group has read them (its `read` word), copy the sends
//   in, write `staged`; wait for the `staged` word of every process it receives from, copy the receives out, write
//   `read`.
// Every wait is for a word written in this group or an earlier one, and a process's `staged` write waits only for
// earlier groups, so no order of posting (nor of the processes' host threads) can deadlock. A send completes on its
// stream once the whole group of its process has moved (as a group is one launch per rank in NCCL). A failed
// communicator moves every word far ahead (release), so no side stream waits for a lost process.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.hpp"
#include "runtime/offload/stream_words.hpp"
#include "runtime/processes/point_to_point_exchange.hpp"
#include "runtime/processes/point_to_point_schedule.hpp"
#include "runtime/processes/staging_area.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"
#include "runtime/transport/ipc/shared_memfds.hpp"
#include "runtime/transport/peer_memory.hpp"

namespace canopy {

class ProcessPointToPoint {
 public:
  // Every process calls it together (one step on `channel`): this process is `process` of `processes`, its GPU CUDA
  // ordinal `ordinal`. unsupported where the driver lacks the stream memory operations (every process alike).
  static Status share(FdChannel& channel, int process, int processes, int ordinal,
                      std::unique_ptr<ProcessPointToPoint>* out);
  ~ProcessPointToPoint() = default;  // the side stream waited for; the staging area is released by its owner
  ProcessPointToPoint(const ProcessPointToPoint&) = delete;
  ProcessPointToPoint& operator=(const ProcessPointToPoint&) = delete;

  // Whether every rank's staging region holds `bytes`.
  bool fits(std::uint64_t bytes) const { return area_.fits(bytes, 0); }
  // Every process together, once each has waited for its side stream (synchronize) and all passed a barrier: the
  // staging regions replaced by ones of at least `bytes`. Throws canopy::Error.
  void grow(PeerMemory& peers, std::uint64_t bytes) { area_.grow(peers, bytes, 0); }
  void release_area(PeerMemory& peers) { area_.release(peers); }
  // The host waits for the side stream: this process's copies in and out are done.
  Status synchronize() { return words_.synchronize(); }

  // Queues this process's part of the group `plan` across processes (its sends and receives; the group's regions
  // fit). Every process calls it for every group, in the same order, whether or not it moves anything.
  Status run(const PointToPointPlan& plan);
  // Ends every wait a side stream is in or will queue. For a failed communicator, from any thread.
  void release();

 private:
  explicit ProcessPointToPoint(int processes) : schedule_(processes) {}
  struct Words;  // a process's page
  Words& words(int process) const;
  Status copy(void* to, const void* from, std::uint64_t bytes, const Transfer& t, const char* what);
  Status queue(const PointToPointStep& step, const PointToPointPlan& plan);  // one step on the side stream

  int process_ = 0;
  PointToPointSchedule schedule_;  // the groups counted (every process alike: the words' values) and their steps
  StagingArea area_;
  SharedMemfds memory_;  // every process's page; unmapped after words_ has unregistered them
  StreamWords words_;
};

}  // namespace canopy
