// A multi-process call's head on the copy engines between two processes (ProcessEngines), then its tail through the
// host rings: a broadcast (the root's engine pushes into the other process's receive buffers) and a reduce (the other
// process's engine pushes its input into the root's receive buffer, the root combining each chunk as it lands) and,
// where CANOPY_ENGINE_BYTES is given, an allreduce (each process combines half of each chunk and pushes the sum back).
// The first phase agrees on the host whether the buffers can be shared; where not, nothing is queued and
// run_in_processes moves the same head on the kernels.
#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "runtime/comm/communicator_state.hpp"

namespace canopy {

void LegacyState::told_unshared(const CollectiveCall& head, bool* told, const char* moved_instead) {
  if (*told || engines_across->unshared_why().empty()) return;
  *told = true;
  log.info(LogSubsys::run, fmt::format("{} count {}: {} ({}); said once, for the first such call", call_name(head),
                                       head.count, moved_instead, engines_across->unshared_why()));
}

// The combining kernels for `rank`'s GPU, loaded before this process publishes its buffers: where they cannot be, the
// reason to refuse them (both processes then take the kernels); else "".
std::string LegacyState::combining_kernels(int rank, const CombineKernels** out) {
  if (Status s = offload->combine_for(placement.gpus[placement.device_of_rank[rank]].arch, out); !s.ok())
    return "the combining kernels: " + s.message();
  return "";
}

Status LegacyState::engines_broke(const Status& s) {
  broken = true;  // the words and the boards may be out of step with the other process's
  broken_why = s.message();
  return s;
}

Status LegacyState::broadcast_on_engines(const CollectiveCall& head, std::uint64_t staged,
                                                 std::span<const cudaStream_t> streams, bool* moved) {
  *moved = false;
  const int own = own_ranks();
  const int first = first_own_rank();
  const bool root = placement.here[placement.device_of_rank[head.root]];
  std::vector<void*> dst;
  for (int i = 0; i < own; ++i) dst.push_back(head.recv[first + i]);
  const std::size_t bytes = head.count * size_of(head.dtype);
  bool shared = false;
  const Status agreed =
      engines_across->agree(root, dst, bytes, [this] { return failed.load(); }, std::chrono::minutes(10), &shared);
  return after_agreeing(agreed, shared, !root, head, staged, streams, moved, [&] {
    return engines_across->broadcast(root, root ? head.send[head.root] : nullptr, dst, bytes, streams);
  });
}

Status LegacyState::reduce_on_engines(const CollectiveCall& head, std::uint64_t staged,
                                              std::span<const cudaStream_t> streams, bool* moved) {
  *moved = false;
  const int first = first_own_rank();
  const bool root = placement.here[placement.device_of_rank[head.root]];
  const std::size_t bytes = head.count * size_of(head.dtype);
  // The root publishes its receive buffer, where the other's input lands; in place its own input is there.
  std::vector<void*> dst;
  if (root) dst.push_back(head.recv[head.root]);
  const bool in_place = root && head.recv[head.root] == head.send[head.root];
  const CombineKernels* kernels = nullptr;
  const std::string refuse = !root     ? std::string()
                             : in_place ? "the reduce is in place: the root's input is there"
                                        : combining_kernels(head.root, &kernels);
  bool shared = false;
  const Status agreed = engines_across->agree(!root, dst, bytes, [this] { return failed.load(); },
                                              std::chrono::minutes(10), &shared, refuse);
  return after_agreeing(agreed, shared, root && !in_place, head, staged, streams, moved, [&] {
    return engines_across->reduce(root, head.root, head.send[first], root ? head.recv[head.root] : nullptr, bytes,
                                  head.dtype, head.op, kernels, streams);
  });
}

Status LegacyState::allreduce_on_engines(const CollectiveCall& head, std::uint64_t staged,
                                                 std::span<const cudaStream_t> streams, bool* moved) {
  *moved = false;
  const int rank = first_own_rank();
  const std::size_t bytes = head.count * size_of(head.dtype);
  // Each process publishes its receive buffer, where the other's input lands; in place its own input is there.
  const bool in_place = head.recv[rank] == head.send[rank];
  const CombineKernels* kernels = nullptr;
  const std::string refuse =
      in_place ? "the allreduce is in place: this process's input is there" : combining_kernels(rank, &kernels);
  bool shared = false;
  const Status agreed = engines_across->agree_both(head.recv[rank], bytes, [this] { return failed.load(); },
                                                   std::chrono::minutes(10), &shared, refuse);
  return after_agreeing(agreed, shared, !in_place, head, staged, streams, moved, [&] {
    return engines_across->allreduce(rank, head.send[rank], head.recv[rank], bytes, head.dtype, head.op, kernels,
                                     streams);
  });
}

Status LegacyState::after_agreeing(const Status& agreed, bool shared, bool tell, const CollectiveCall& head,
                                           std::uint64_t staged, std::span<const cudaStream_t> streams, bool* moved,
                                           const std::function<Status()>& queue) {
  if (!agreed.ok()) return engines_broke(agreed);
  if (!shared) {
    if (tell) told_unshared(head, &engines_unshared_told, "on the kernels, not the copy engines across processes");
    return Status();
  }
  // The host ring's side stream forks before the engines' join lands on the callers' streams.
  if (staged > 0)
    if (Status s = host_ring->fork(streams); !s.ok()) return s;
  profile.mark(CallProfile::choose);
  const Status s = queue();
  profile.mark(CallProfile::launch);
  if (!s.ok()) return engines_broke(s);
  *moved = true;
  if (log.enabled(LogLevel::debug, LogSubsys::run))
    log.debug(LogSubsys::run, fmt::format("{} count {} on the copy engines across processes{}", call_name(head),
                                          head.count,
                                          staged ? fmt::format(", {} elements through host memory", staged) : ""));
  return staged > 0 ? stage_through_host(head, staged, streams) : Status();
}

}  // namespace canopy
