// A multi-process call's tail through the host rings (ProcessHostRing; ProcessCallPath::stage_through_host): after the
// kernels or the copy engines moved its head, a broadcast's root sends the rest through its ring to every other
// process; a reduce's other processes send their ranks' tails, which the root gathers and combines with its own; an
// allreduce's processes all exchange theirs and each combines every rank's in rank order. The callers' streams then
// wait for the ring's side stream.
#include <fmt/format.h>

#include <vector>

#include "runtime/processes/process_call_path.hpp"

namespace canopy {

namespace {

// How many ranks each process (a placement's device index) holds.
std::vector<int> ranks_per_process(const Placement& placement) {
  std::vector<int> ranks(placement.here.size(), 0);
  for (int d : placement.device_of_rank) ++ranks[d];
  return ranks;
}

// Every rank's tail (from byte `offset`) in rank order, as process `at` combines them after a gather: its own ranks'
// inputs, every other process's from `ring`'s gathering buffer.
std::vector<const void*> tails_in_rank_order(const Placement& placement, const ProcessHostRing& ring,
                                             const CollectiveCall& head, std::size_t offset, int at) {
  std::vector<const void*> sources;
  std::vector<int> local(placement.here.size(), 0);
  for (int r = 0; r < static_cast<int>(placement.device_of_rank.size()); ++r) {
    const int p = placement.device_of_rank[r];
    sources.push_back(p == at ? static_cast<const char*>(head.send[r]) + offset : ring.gathered(p, local[p]++));
  }
  return sources;
}

}  // namespace

Status ProcessCallPath::stage_through_host(const CollectiveCall& head, std::uint64_t staged,
                                           std::span<const cudaStream_t> streams) {
  const Status s = head.collective == Collective::reduce      ? reduce_through_host(head, staged)
                   : head.collective == Collective::allreduce ? allreduce_through_host(head, staged)
                                                              : broadcast_through_host(head, staged);
  const Status joined = s.ok() ? host_ring_->join(streams) : s;
  // The ring's words may be out of step with the other processes': every later call fails.
  return joined.ok() ? joined : kernels_.mark_broken(joined);
}

Status ProcessCallPath::broadcast_through_host(const CollectiveCall& head, std::uint64_t staged) {
  const Placement& placement = layout_.placement;
  const int own = own_ranks();
  const int first = first_own_rank();
  const std::size_t elem = size_of(head.dtype);
  const std::size_t offset = head.count * elem;  // the kernels moved the head, `head.count` elements
  const std::size_t bytes = staged * elem;
  std::vector<void*> targets;
  for (int i = 0; i < own; ++i) targets.push_back(static_cast<char*>(head.recv[first + i]) + offset);
  const int root_process = placement.device_of_rank[head.root];  // a process is its device index
  return placement.here[root_process]
             ? host_ring_->send(static_cast<const char*>(head.send[head.root]) + offset, targets, bytes)
             : host_ring_->receive(root_process, targets, bytes);
}

// Each process other than the root's sends its ranks' tails through its own ring; the root's gathers them and
// combines them with its own ranks' tails in rank order (the op of the kernels' call: avg runs as a sum, divided
// after); every other process counts the chunks of the rings it does not touch.
Status ProcessCallPath::reduce_through_host(const CollectiveCall& head, std::uint64_t staged) {
  const Placement& placement = layout_.placement;
  const int first = first_own_rank();
  const std::size_t elem = size_of(head.dtype);
  const std::size_t offset = head.count * elem;
  const std::size_t bytes = staged * elem;
  const int processes = static_cast<int>(placement.here.size());
  const int root_process = placement.device_of_rank[head.root];
  const std::vector<int> ranks_of_process = ranks_per_process(placement);
  if (!placement.here[root_process]) {
    const int me = placement.device_of_rank[first];
    for (int p = 0; p < processes; ++p)
      if (p != me && p != root_process) host_ring_->gather_pass(p, ranks_of_process[p], root_process, bytes);
    std::vector<const void*> sources;
    for (int i = 0; i < own_ranks(); ++i) sources.push_back(static_cast<const char*>(head.send[first + i]) + offset);
    return host_ring_->gather_send(root_process, sources, bytes);
  }
  const CombineKernels* kernels = nullptr;
  if (Status s = kernels_.offload()->combine_for(placement.gpus[root_process].arch, &kernels); !s.ok()) return s;
  if (Status s = host_ring_->gather_receive(ranks_of_process, bytes); !s.ok()) return s;
  return host_ring_->combine(*kernels, static_cast<char*>(head.recv[head.root]) + offset,
                             tails_in_rank_order(placement, *host_ring_, head, offset, root_process), staged,
                             head.dtype, head.op);
}

// Every process sends its ranks' tails through its own ring and gathers every other process's (exchange), then
// combines them all in rank order into its first rank's output (the same order, so the same result, in every process;
// the op of the kernels' call: avg runs as a sum, divided after), and copies that to its other ranks' outputs. In
// place, the first rank's output is its input: the combining kernel reads each element before writing it, and the
// other ranks' inputs are read before their outputs are written.
Status ProcessCallPath::allreduce_through_host(const CollectiveCall& head, std::uint64_t staged) {
  const Placement& placement = layout_.placement;
  const int own = own_ranks();
  const int first = first_own_rank();
  const std::size_t elem = size_of(head.dtype);
  const std::size_t offset = head.count * elem;
  const std::size_t bytes = staged * elem;
  const int me = placement.device_of_rank[first];
  const CombineKernels* kernels = nullptr;
  if (Status s = kernels_.offload()->combine_for(placement.gpus[me].arch, &kernels); !s.ok()) return s;
  std::vector<const void*> mine;
  for (int i = 0; i < own; ++i) mine.push_back(static_cast<const char*>(head.send[first + i]) + offset);
  if (Status s = host_ring_->exchange(mine, ranks_per_process(placement), bytes); !s.ok()) return s;
  char* out = static_cast<char*>(head.recv[first]) + offset;
  if (Status s = host_ring_->combine(*kernels, out, tails_in_rank_order(placement, *host_ring_, head, offset, me),
                                     staged, head.dtype, head.op);
      !s.ok())
    return s;
  std::vector<void*> others;
  for (int i = 1; i < own; ++i) others.push_back(static_cast<char*>(head.recv[first + i]) + offset);
  return host_ring_->copy_local(out, others, bytes);
}

}  // namespace canopy
