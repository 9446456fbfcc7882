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

constexpr std::uint32_t kPointToPointTag = 0x80000005u;  // beside the counters', the rings', the engines' (0x8000000[1-4])
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
  std::unique_ptr<ProcessPointToPoint> p(new ProcessPointToPoint());
  p->process_ = process;
  p->last_read_.assign(processes, 0);
  p->waited_read_.assign(processes, 0);
  if (Status s = p->memory_.share(channel, kPointToPointTag, "the point-to-point words", process, processes,
                                  kWordsPageBytes, true);
      !s.ok())
    return s;
  std::vector<void*> pages;
  for (int q = 0; q < processes; ++q) pages.push_back(p->memory_.at(q));
  if (Status s = p->words_.create("send and receive across processes", ordinal, pages, kWordsPageBytes); !s.ok()) return s;
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

Status ProcessPointToPoint::run(const PointToPointPlan& plan) {
  const std::uint32_t group = groups_.fetch_add(1, std::memory_order_relaxed) + 1;
  // Which processes read this process's regions, and when: this group's readers are waited for by a later group.
  std::vector<std::uint32_t> guard = last_read_;
  for (std::size_t q = 0; q < plan.readers.size(); ++q)
    if (plan.readers[q]) last_read_[q] = group;
  if (plan.sends.empty() && plan.receives.empty()) return Status();
  std::vector<cudaStream_t> streams;
  const auto add = [&](cudaStream_t s) {
    if (std::find(streams.begin(), streams.end(), s) == streams.end()) streams.push_back(s);
  };
  for (const StagedTransfer& s : plan.sends) add(s.transfer.send_stream);
  for (const StagedTransfer& r : plan.receives) add(r.transfer.recv_stream);
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  if (Status s = words_.fork(streams); !s.ok()) return s;
  if (!plan.sends.empty()) {
    // This process's regions are free once every earlier reader has read them.
    for (std::size_t q = 0; q < guard.size(); ++q) {
      if (guard[q] == 0 || guard[q] == waited_read_[q]) continue;
      if (Status s = words_.wait(static_cast<int>(q), &words(static_cast<int>(q)).read, guard[q]); !s.ok()) return s;
      waited_read_[q] = guard[q];
    }
    for (const StagedTransfer& s : plan.sends) {
      char* region = static_cast<char*>(area_.send(s.transfer.sender)) + s.offset;
      if (Status st = copy(region, s.transfer.from, s.transfer.bytes(), s.transfer, "into its staging region");
          !st.ok())
        return st;
    }
    if (Status s = words_.write(process_, &words(process_).staged, group); !s.ok()) return s;
  }
  if (!plan.receives.empty()) {
    for (std::size_t q = 0; q < plan.reads_from.size(); ++q)
      if (plan.reads_from[q])
        if (Status s = words_.wait(static_cast<int>(q), &words(static_cast<int>(q)).staged, group); !s.ok()) return s;
    for (const StagedTransfer& r : plan.receives) {
      const char* region = static_cast<const char*>(area_.send(r.transfer.sender)) + r.offset;
      if (Status st = copy(r.transfer.to, region, r.transfer.bytes(), r.transfer, "out of its sender's staging region");
          !st.ok())
        return st;
    }
    if (Status s = words_.write(process_, &words(process_).read, group); !s.ok()) return s;
  }
  return words_.join(streams);
}

void ProcessPointToPoint::release() {
  const std::uint32_t ahead = ring_release_value(groups_.load(std::memory_order_relaxed) + 2);
  for (int q = 0; q < memory_.processes(); ++q) {
    store_release(words(q).staged, ahead);
    store_release(words(q).read, ahead);
  }
}

}  // namespace canopy
