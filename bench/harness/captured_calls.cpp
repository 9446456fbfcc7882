// CapturedCalls (see captured_calls.hpp).
#include "bench/harness/captured_calls.hpp"

#include <fmt/format.h>

#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

Status CapturedCalls::capture(std::span<const int> ordinals, std::span<const cudaStream_t> streams, int calls,
                              const std::function<Status()>& launch, std::unique_ptr<CapturedCalls>* out) {
  std::unique_ptr<CapturedCalls> c(new CapturedCalls());
  c->ordinals_.assign(ordinals.begin(), ordinals.end());
  c->streams_.assign(streams.begin(), streams.end());
  CurrentDevice keep;
  const auto event_on = [&](int ordinal, cudaEvent_t* e) {
    cudaError_t r = cudaSetDevice(ordinal);
    if (r == cudaSuccess) r = cudaEventCreateWithFlags(e, cudaEventDisableTiming);
    if (r == cudaSuccess) c->events_.push_back({ordinal, *e});
    return r;
  };
  // Events first: creating one is not capturable.
  std::vector<cudaEvent_t> fork(streams.size()), join(streams.size());
  c->before_.resize(streams.size());
  for (std::size_t d = 1; d < streams.size(); ++d) {
    for (auto [ordinal, e] :
         {std::pair{ordinals[0], &fork[d]}, std::pair{ordinals[d], &join[d]}, std::pair{ordinals[d], &c->before_[d]}})
      if (cudaError_t r = event_on(ordinal, e); r != cudaSuccess) return cuda_status(r, "cudaEventCreate");
  }
  if (cudaError_t r = event_on(ordinals[0], &c->after_); r != cudaSuccess) return cuda_status(r, "cudaEventCreate");
  if (cudaError_t r = cudaSetDevice(ordinals[0]); r != cudaSuccess) return cuda_status(r, "cudaSetDevice");
  if (cudaError_t r = cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeThreadLocal); r != cudaSuccess)
    return cuda_status(r, "cudaStreamBeginCapture");
  Status failed;
  const auto check = [&](cudaError_t r, const char* what) {
    if (r != cudaSuccess && failed.ok()) failed = cuda_status(r, what);
  };
  for (std::size_t d = 1; d < streams.size() && failed.ok(); ++d) {
    check(cudaSetDevice(ordinals[0]), "cudaSetDevice");
    check(cudaEventRecord(fork[d], streams[0]), "cudaEventRecord (fork)");
    check(cudaSetDevice(ordinals[d]), "cudaSetDevice");
    check(cudaStreamWaitEvent(streams[d], fork[d]), "cudaStreamWaitEvent (fork)");
  }
  for (int i = 0; i < calls && failed.ok(); ++i)
    if (Status s = launch(); !s.ok()) failed = s;
  for (std::size_t d = 1; d < streams.size(); ++d) {  // joined even after a failure, so the capture can end
    check(cudaSetDevice(ordinals[d]), "cudaSetDevice");
    check(cudaEventRecord(join[d], streams[d]), "cudaEventRecord (join)");
    check(cudaSetDevice(ordinals[0]), "cudaSetDevice");
    check(cudaStreamWaitEvent(streams[0], join[d]), "cudaStreamWaitEvent (join)");
  }
  (void)cudaSetDevice(ordinals[0]);
  const cudaError_t ended = cudaStreamEndCapture(streams[0], &c->graph_);
  if (!failed.ok()) return failed;
  if (ended != cudaSuccess) return cuda_status(ended, "cudaStreamEndCapture");
  if (cudaError_t r = cudaGraphInstantiate(&c->exec_, c->graph_, 0); r != cudaSuccess)
    return cuda_status(r, fmt::format("cudaGraphInstantiate ({} captured calls)", calls));
  *out = std::move(c);
  return Status();
}

CapturedCalls::~CapturedCalls() {
  CurrentDevice keep;
  if (exec_) (void)cudaGraphExecDestroy(exec_);
  if (graph_) (void)cudaGraphDestroy(graph_);
  for (const auto& [ordinal, e] : events_) {
    (void)cudaSetDevice(ordinal);
    (void)cudaEventDestroy(e);
  }
  (void)cudaGetLastError();
}

Status CapturedCalls::replay() {
  CurrentDevice keep;
  cudaError_t r = cudaSuccess;
  for (std::size_t d = 1; d < streams_.size() && r == cudaSuccess; ++d) {
    r = cudaSetDevice(ordinals_[d]);
    if (r == cudaSuccess) r = cudaEventRecord(before_[d], streams_[d]);
    if (r == cudaSuccess) r = cudaSetDevice(ordinals_[0]);
    if (r == cudaSuccess) r = cudaStreamWaitEvent(streams_[0], before_[d]);
  }
  if (r != cudaSuccess) return cuda_status(r, "ordering a graph replay after the other streams' work");
  if (r = cudaSetDevice(ordinals_[0]); r == cudaSuccess) r = cudaGraphLaunch(exec_, streams_[0]);
  if (r != cudaSuccess) return cuda_status(r, "cudaGraphLaunch");
  if (streams_.size() > 1) r = cudaEventRecord(after_, streams_[0]);
  for (std::size_t d = 1; d < streams_.size() && r == cudaSuccess; ++d) {
    r = cudaSetDevice(ordinals_[d]);
    if (r == cudaSuccess) r = cudaStreamWaitEvent(streams_[d], after_);
  }
  return r == cudaSuccess ? Status() : cuda_status(r, "ordering the other streams' work after a graph replay");
}

}  // namespace canopy
