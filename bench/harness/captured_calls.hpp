// CapturedCalls: a number of calls of a launch function captured into one CUDA graph across the streams of several
// GPUs, instantiated, and replayed: nccl-tests' -G, for `canopy bench --graph`. The capture begins on the first
// stream, forks to the others through events and joins them back at the end, so one replay on the first stream
// runs every GPU's part and ends when all have. A replay is ordered like a call on every stream: it first waits for
// the work already queued on the others (a graph launched on one stream waits only for that stream's), and work
// queued on them afterwards waits for it.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/status.hpp"

namespace canopy {

class CapturedCalls {
 public:
  // streams[d] lives on GPU ordinals[d]. A failed launch or capture ends the capture (the streams stay usable) and
  // returns why.
  static Status capture(std::span<const int> ordinals, std::span<const cudaStream_t> streams, int calls,
                        const std::function<Status()>& launch, std::unique_ptr<CapturedCalls>* out);
  ~CapturedCalls();
  CapturedCalls(const CapturedCalls&) = delete;
  CapturedCalls& operator=(const CapturedCalls&) = delete;

  Status replay();  // one launch of the graph on the first stream (every call it holds, on every GPU), in order

 private:
  CapturedCalls() = default;
  std::vector<int> ordinals_;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> before_;  // per stream after the first: its queued work, which the replay waits for
  cudaEvent_t after_ = nullptr;      // on the first stream: the replay, which the others wait for
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::vector<std::pair<int, cudaEvent_t>> events_;  // the forks and joins, with their GPUs
};

}  // namespace canopy
