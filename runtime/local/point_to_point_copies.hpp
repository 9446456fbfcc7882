// PointToPointCopies: a matched group of sends and receives (runtime/call/point_to_point.hpp) moved by one process
// over its GPUs, with copies ordered by events so that no order of posting can deadlock: every sender's stream
// marks where its data is ready, each receiver's stream waits for its senders' marks and copies (cudaMemcpyPeerAsync
// across GPUs, cudaMemcpyAsync on one), then every sender's stream waits for its receivers' copies, so a send
// completes on its stream only once its buffer has been read. All marks of a phase are recorded before any stream
// waits for them, so the waits form no cycle and the pairs' copies run side by side. Events are kept per GPU and
// reused by every group.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <span>
#include <vector>

#include "core/status.hpp"
#include "runtime/call/point_to_point.hpp"

namespace canopy {

class PointToPointCopies {
 public:
  PointToPointCopies() = default;
  ~PointToPointCopies();  // destroys its events
  PointToPointCopies(const PointToPointCopies&) = delete;
  PointToPointCopies& operator=(const PointToPointCopies&) = delete;

  // Issues `transfers` (those of 0 bytes move nothing and order nothing) on their streams; `ordinal_of_rank`: each
  // rank's CUDA ordinal. A CUDA error names the call, the GPU and the transfer. The current device is kept.
  Status run(std::span<const Transfer> transfers, std::span<const int> ordinal_of_rank);

 private:
  // A stream that sends or receives in the group, on its GPU (a default stream is each GPU's own), and its mark.
  struct Side {
    cudaStream_t stream = nullptr;
    int ordinal = 0;
    cudaEvent_t mark = nullptr;
    bool operator==(const Side& o) const { return stream == o.stream && ordinal == o.ordinal; }
  };
  static std::size_t side_of(std::vector<Side>* sides, cudaStream_t stream, int ordinal);
  Status mark(Side* side, const char* what);  // an event of the side's GPU recorded on its stream
  Status take_event(int ordinal, cudaEvent_t* out);  // the GPU's next event free in this group, made on first need

  std::map<int, std::vector<cudaEvent_t>> events_;  // per CUDA ordinal, made once, reused by every group
  std::map<int, std::size_t> taken_;                // per CUDA ordinal, this group's
};

}  // namespace canopy
