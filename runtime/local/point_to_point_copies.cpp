// PointToPointCopies (point_to_point_copies.hpp): the three phases of a group (senders' marks; receivers' waits and
// copies; receivers' marks and senders' waits), each CUDA call checked into a Status that names it.
#include "runtime/local/point_to_point_copies.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>

#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

PointToPointCopies::~PointToPointCopies() {
  CurrentDevice keep;
  for (auto& [ordinal, events] : events_) {
    if (cudaSetDevice(ordinal) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    for (cudaEvent_t e : events) (void)cudaEventDestroy(e);
  }
  (void)cudaGetLastError();
}

std::size_t PointToPointCopies::side_of(std::vector<Side>* sides, cudaStream_t stream, int ordinal) {
  const Side side{stream, ordinal};
  const auto found = std::find(sides->begin(), sides->end(), side);
  if (found != sides->end()) return static_cast<std::size_t>(found - sides->begin());
  sides->push_back(side);
  return sides->size() - 1;
}

Status PointToPointCopies::take_event(int ordinal, cudaEvent_t* out) {
  std::vector<cudaEvent_t>& events = events_[ordinal];
  std::size_t& taken = taken_[ordinal];
  if (taken == events.size()) {
    cudaEvent_t e = nullptr;
    CANOPY_CUDA_RETURN_ON_GPU("send_recv", cudaEventCreateWithFlags(&e, cudaEventDisableTiming), ordinal);
    events.push_back(e);
  }
  *out = events[taken++];
  return Status();
}

Status PointToPointCopies::mark(Side* side, const char* what) {
  CANOPY_CUDA_RETURN_ON_GPU("send_recv", cudaSetDevice(side->ordinal), side->ordinal);
  if (Status s = take_event(side->ordinal, &side->mark); !s.ok()) return s;
  CANOPY_CUDA_RETURN_ON_GPU(what, cudaEventRecord(side->mark, side->stream), side->ordinal);
  return Status();
}

Status PointToPointCopies::run(std::span<const Transfer> transfers, std::span<const int> ordinal_of_rank) {
  struct Step {
    const Transfer* transfer;
    std::size_t sender;    // in senders
    std::size_t receiver;  // in receivers
  };
  std::vector<Side> senders;
  std::vector<Side> receivers;
  std::vector<Step> steps;
  for (const Transfer& t : transfers) {
    if (t.bytes() == 0) continue;
    steps.push_back(Step{&t, side_of(&senders, t.send_stream, ordinal_of_rank[t.sender]),
                         side_of(&receivers, t.recv_stream, ordinal_of_rank[t.receiver])});
  }
  if (steps.empty()) return Status();
  taken_.clear();
  CurrentDevice keep;
  // 1. Each sender's stream marks where its data is ready (after the work the caller issued on it before).
  for (Side& side : senders)
    if (Status s = mark(&side, "send_recv: a sender's stream marking its data ready"); !s.ok()) return s;
  // 2. Each receiver's stream waits for its senders' marks (once per pair of streams), then copies.
  std::vector<std::pair<std::size_t, std::size_t>> waited;  // (sender, receiver)
  for (const Step& step : steps) {
    const Transfer& t = *step.transfer;
    const Side& from = senders[step.sender];
    const Side& to = receivers[step.receiver];
    const std::string who = fmt::format("send_recv: rank {}'s send {} to rank {} ({} bytes)", t.sender, t.index,
                                        t.receiver, t.bytes());
    CANOPY_CUDA_RETURN_ON_GPU(who, cudaSetDevice(to.ordinal), to.ordinal);
    const std::pair<std::size_t, std::size_t> pair{step.sender, step.receiver};
    if (!(from == to) && std::find(waited.begin(), waited.end(), pair) == waited.end()) {
      CANOPY_CUDA_RETURN_ON_GPU(who, cudaStreamWaitEvent(to.stream, from.mark, 0), to.ordinal);
      waited.push_back(pair);
    }
    if (from.ordinal == to.ordinal)
      CANOPY_CUDA_RETURN_ON_GPU(who, cudaMemcpyAsync(t.to, t.from, t.bytes(), cudaMemcpyDefault, to.stream),
                                to.ordinal);
    else
      CANOPY_CUDA_RETURN_ON_GPU(
          who, cudaMemcpyPeerAsync(t.to, to.ordinal, t.from, from.ordinal, t.bytes(), to.stream), to.ordinal);
  }
  // 3. Each receiver's stream marks its copies done; each sender's stream waits for its receivers' marks.
  for (Side& side : receivers)
    if (Status s = mark(&side, "send_recv: a receiver's stream marking its copies done"); !s.ok()) return s;
  waited.clear();
  for (const Step& step : steps) {
    const Side& from = senders[step.sender];
    const Side& to = receivers[step.receiver];
    const std::pair<std::size_t, std::size_t> pair{step.sender, step.receiver};
    if (from == to || std::find(waited.begin(), waited.end(), pair) != waited.end()) continue;
    const char* who = "send_recv: a sender's stream waiting for its receivers' copies";
    CANOPY_CUDA_RETURN_ON_GPU(who, cudaSetDevice(from.ordinal), from.ordinal);
    CANOPY_CUDA_RETURN_ON_GPU(who, cudaStreamWaitEvent(from.stream, to.mark, 0), from.ordinal);
    waited.push_back(pair);
  }
  return Status();
}

}  // namespace canopy
