// A multi-process call's head on the copy engines between two processes (ProcessEngines), then its tail through the
// host rings: a broadcast (the root's engine pushes into the other process's receive buffers) and a reduce (the other
// process's engine pushes its input into the root's receive buffer, the root combining each chunk as it lands) and,
// where CANOPY_ENGINE_BYTES is given, an allreduce (each process combines half of each chunk and pushes the sum back).
// The first phase agrees on the host whether the buffers can be shared; where not, nothing is queued and
// ProcessCallPath::run_in_processes moves the same head on the kernels.
#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "runtime/processes/process_call_path.hpp"

namespace canopy {

void ProcessCallPath::told_unshared(const CollectiveCall& head, bool* told, const char* moved_instead) {
  if (*told || engines_across_->unshared_why().empty()) return;
  *told = true;
  layout_.log.info(LogSubsys::run,
                   fmt::format("{} count {}: {} ({}); said once, for the first such call", call_name(head), head.count,
                               moved_instead, engines_across_->unshared_why()));
}

// The combining kernels for `rank`'s GPU, loaded before this process publishes its buffers: where they cannot be, the
// reason to refuse them (both processes then take the kernels); else "".
std::string ProcessCallPath::combining_refusal(int rank, const CombineKernels** out) {
  if (Status s = kernels_.combining_kernels(rank, out); !s.ok()) return "the combining kernels: " + s.message();
  return "";
}

Status ProcessCallPath::broadcast_on_engines(const CollectiveCall& head, std::uint64_t staged,
                                             std::span<const cudaStream_t> streams, bool* moved) {
  *moved = false;
  const int own = own_ranks();
  const int first = first_own_rank();
  const bool root = layout_.placement.here[layout_.placement.device_of_rank[head.root]];
  std::vector<void*> dst;
  for (int i = 0; i < own; ++i) dst.push_back(head.recv[first + i]);
  const std::size_t bytes = head.count * size_of(head.dtype);
  bool shared = false;
  const Status agreed = engines_across_->agree(
      root, dst, bytes, [this] { return failure_.failed(); }, std::chrono::minutes(10), &shared);
  return after_agreeing(agreed, shared, !root, head, staged, streams, moved, [&] {
    return engines_across_->broadcast(root, root ? head.send[head.root] : nullptr, dst, bytes, streams);
  });
}

Status ProcessCallPath::reduce_on_engines(const CollectiveCall& head, std::uint64_t staged,
                                          std::span<const cudaStream_t> streams, bool* moved) {
  *moved = false;
  const int first = first_own_rank();
  const bool root = layout_.placement.here[layout_.placement.device_of_rank[head.root]];
  const std::size_t bytes = head.count * size_of(head.dtype);
  // The root publishes its receive buffer, where the other's input lands; in place its own input is there.
  std::vector<void*> dst;
  if (root) dst.push_back(head.recv[head.root]);
  const bool in_place = root && head.recv[head.root] == head.send[head.root];
  const CombineKernels* kernels = nullptr;
  const std::string refuse = !root      ? std::string()
                             : in_place ? "the reduce is in place: the root's input is there"
                                        : combining_refusal(head.root, &kernels);
  bool shared = false;
  const Status agreed = engines_across_->agree(
      !root, dst, bytes, [this] { return failure_.failed(); }, std::chrono::minutes(10), &shared, refuse);
  return after_agreeing(agreed, shared, root && !in_place, head, staged, streams, moved, [&] {
    return engines_across_->reduce(root, head.root, head.send[first], root ? head.recv[head.root] : nullptr, bytes,
                                   head.dtype, head.op, kernels, streams);
  });
}

Status ProcessCallPath::allreduce_on_engines(const CollectiveCall& head, std::uint64_t staged,
                                             std::span<const cudaStream_t> streams, bool* moved) {
  *moved = false;
  const int rank = first_own_rank();
  const std::size_t bytes = head.count * size_of(head.dtype);
  // Each process publishes its receive buffer, where the other's input lands; in place its own input is there.
  const bool in_place = head.recv[rank] == head.send[rank];
  const CombineKernels* kernels = nullptr;
  const std::string refuse =
      in_place ? "the allreduce is in place: this process's input is there" : combining_refusal(rank, &kernels);
  bool shared = false;
  const Status agreed = engines_across_->agree_both(
      head.recv[rank], bytes, [this] { return failure_.failed(); }, std::chrono::minutes(10), &shared, refuse);
  return after_agreeing(agreed, shared, !in_place, head, staged, streams, moved, [&] {
    return engines_across_->allreduce(rank, head.send[rank], head.recv[rank], bytes, head.dtype, head.op, kernels,
                                      streams);
  });
}

Status ProcessCallPath::after_agreeing(const Status& agreed, bool shared, bool tell, const CollectiveCall& head,
                                       std::uint64_t staged, std::span<const cudaStream_t> streams, bool* moved,
                                       const std::function<Status()>& queue) {
  if (!agreed.ok()) return kernels_.mark_broken(agreed);  // the words and boards may be out of step
  if (!shared) {
    if (tell) told_unshared(head, &engines_unshared_told_, "on the kernels, not the copy engines across processes");
    return Status();
  }
  // The host ring's side stream forks before the engines' join lands on the callers' streams.
  if (staged > 0)
    if (Status s = host_ring_->fork(streams); !s.ok()) return s;
  CallProfile& profile = kernels_.profile();
  profile.mark(CallProfile::choose);
  const Status s = queue();
  profile.mark(CallProfile::launch);
  if (!s.ok()) return kernels_.mark_broken(s);
  *moved = true;
  if (layout_.log.enabled(LogLevel::debug, LogSubsys::run))
    layout_.log.debug(LogSubsys::run,
                      fmt::format("{} count {} on the copy engines across processes{}", call_name(head), head.count,
                                  staged ? fmt::format(", {} elements through host memory", staged) : ""));
  return staged > 0 ? stage_through_host(head, staged, streams) : Status();
}

}  // namespace canopy
