// ProcessPointToPoint (see process_point_to_point.hpp): the pages of words, and a group's copies across processes on
// the side stream between its waits and writes.
#include "runtime/processes/process_point_to_point.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/shared_word.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/offload/ring_sequence.hpp"

namespace canopy {

namespace {

// Beside the call counters', the host rings', the copy engines' and their descriptors' (0x80000001 to 0x80000004).
constexpr std::uint32_t kPointToPointTag = 0x80000005u;
constexpr std::size_t kWordsPageBytes = 4096;

}  // namespace

// The words on cache lines of their own: the writer is another process's side stream.
struct ProcessPointToPoint::Words {
  std::uint32_t staged = 0;  // the last group whose sends this process copied into its staging regions
  std::uint32_t staged_pad[15] = {};
  std::uint32_t read = 0;  // the last group whose receives this process copied out of the others' regions
  std::uint32_t read_pad[15] = {};
};

Status ProcessPointToPoint::share(FdChannel& channel, int process, int processes, int ordinal,
                                  std::unique_ptr<ProcessPointToPoint>* out) {
  static_assert(sizeof(Words) <= kWordsPageBytes);
  if (!StreamWords::supported())
    return Status(StatusCode::unsupported, "send and receive across processes need the driver's stream memory "
                                           "operations (cuStreamWaitValue32, cuStreamWriteValue32), which this "
                                           "driver lacks");
  std::unique_ptr<ProcessPointToPoint> p(new ProcessPointToPoint(processes));
  p->process_ = process;
  if (Status s = p->memory_.share(channel, kPointToPointTag, "the point-to-point words", process, processes,
                                  kWordsPageBytes, true);
      !s.ok())
    return s;
  std::vector<void*> pages;
  for (int q = 0; q < processes; ++q) pages.push_back(p->memory_.at(q));
  if (Status s = p->words_.create("send and receive across processes", ordinal, pages, kWordsPageBytes); !s.ok())
    return s;
  *out = std::move(p);
  return Status();
}

ProcessPointToPoint::Words& ProcessPointToPoint::words(int process) const {
  return *static_cast<Words*>(memory_.at(process));
}

Status ProcessPointToPoint::copy(void* to, const void* from, std::uint64_t bytes, const Transfer& t,
                                 const char* what) {
  if (cudaError_t e = cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, words_.side()); e != cudaSuccess)
    return words_.failed(fmt::format("copying send {} of rank {} to rank {} ({} bytes) {}", t.index, t.sender,
                                     t.receiver, bytes, what),
                         e);
  return Status();
}

Status ProcessPointToPoint::queue(const PointToPointStep& step, const PointToPointPlan& plan) {
  using Kind = PointToPointStep::Kind;
  switch (step.kind) {
    case Kind::wait_read:
      return words_.wait(step.process, &words(step.process).read, step.value);
    case Kind::wait_staged:
      return words_.wait(step.process, &words(step.process).staged, step.value);
    case Kind::write_staged:
      return words_.write(process_, &words(process_).staged, step.value);
    case Kind::write_read:
      return words_.write(process_, &words(process_).read, step.value);
    case Kind::copy_in:
      for (const StagedTransfer& s : plan.sends) {
        char* region = static_cast<char*>(area_.send(s.transfer.sender)) + s.offset;
        if (Status st = copy(region, s.transfer.from, s.transfer.bytes(), s.transfer, "into its staging region");
            !st.ok())
          return st;
      }
      return Status();
    case Kind::copy_out:
      for (const StagedTransfer& r : plan.receives) {
        const char* region = static_cast<const char*>(area_.send(r.transfer.sender)) + r.offset;
        if (Status st =
                copy(r.transfer.to, region, r.transfer.bytes(), r.transfer, "out of its sender's staging region");
            !st.ok())
          return st;
      }
      return Status();
  }
  return Status();
}

Status ProcessPointToPoint::run(const PointToPointPlan& plan) {
  const std::vector<PointToPointStep> steps = schedule_.next(plan, process_);
  if (steps.empty()) return Status();
  std::vector<cudaStream_t> streams;
  const auto add = [&](cudaStream_t s) {
    if (std::find(streams.begin(), streams.end(), s) == streams.end()) streams.push_back(s);
  };
  for (const StagedTransfer& s : plan.sends) add(s.transfer.send_stream);
  for (const StagedTransfer& r : plan.receives) add(r.transfer.recv_stream);
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  if (Status s = words_.fork(streams); !s.ok()) return s;
  for (const PointToPointStep& step : steps)
    if (Status s = queue(step, plan); !s.ok()) return s;
  return words_.join(streams);
}

void ProcessPointToPoint::release() {
  const std::uint32_t ahead = ring_release_value(schedule_.groups() + 2);
  for (int q = 0; q < memory_.processes(); ++q) {
    store_release(words(q).staged, ahead);
    store_release(words(q).read, ahead);
  }
}

}  // namespace canopy
