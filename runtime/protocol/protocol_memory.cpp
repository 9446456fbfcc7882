// ProtocolMemory: scratch and the plan-free protocols' lines and counters.
#include "runtime/protocol/protocol_memory.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/direct_source.hpp"
#include "codegen/ll128_source.hpp"
#include "codegen/low_latency_source.hpp"
#include "templates/device_args.cuh"

namespace canopy {

ProtocolMemory::ProtocolMemory(PeerMemory& peers, int ranks, std::vector<int> first_rank, Logger log)
    : peers_(peers),
      ranks_(ranks),
      first_rank_(std::move(first_rank)),
      log_(std::move(log)),
      scratch_(ranks, nullptr),
      scratch_bytes_(ranks, 0) {}

ProtocolMemory::~ProtocolMemory() {
  for (void* p : scratch_) peers_.free(p);
  for (void* p : retired_) peers_.free(p);
  for (const LineMemory* m : {&ll_, &ll128_})
    for (const std::vector<void*>* area : {&m->lines, &m->acks})
      for (void* p : *area) peers_.free(p);
  for (const std::vector<void*>* area : {&direct_.flags, &direct_.peer_flags})
    for (void* p : *area) peers_.free(p);
}

std::vector<unsigned long long*> launch_counters_after(const std::vector<void*>& areas,
                                                       std::span<const int> first_rank,
                                                       const std::function<int(int)>& lines) {
  std::vector<unsigned long long*> out;
  for (int first : first_rank)
    out.push_back(static_cast<unsigned long long*>(areas[first]) +
                  static_cast<std::size_t>(lines(first)) * kFlagStride);
  return out;
}

bool ProtocolMemory::scratch_short(const std::vector<RankResources>& need) const {
  for (std::size_t r = 0; r < need.size(); ++r)
    if (std::max<std::int64_t>(need[r].scratch_bytes, 16) > scratch_bytes_[r]) return true;
  return false;
}

void ProtocolMemory::grow_scratch(const std::vector<RankResources>& need, bool keep_old) {
  for (std::size_t r = 0; r < need.size(); ++r) {
    const std::int64_t bytes = std::max<std::int64_t>(need[r].scratch_bytes, 16);
    if (bytes <= scratch_bytes_[r]) continue;
    if (keep_old && scratch_[r])
      retired_.push_back(scratch_[r]);
    else
      peers_.free(scratch_[r]);
    scratch_[r] = nullptr;
    scratch_bytes_[r] = 0;
    scratch_[r] = peers_.allocate(static_cast<int>(r), static_cast<std::size_t>(bytes));
    scratch_bytes_[r] = bytes;
  }
  log_.debug(LogSubsys::init, fmt::format("scratch per rank grown to {} bytes (rank 0)", scratch_bytes_[0]));
}

void ProtocolMemory::allocate_lines(const char* what, std::int64_t bytes, int blocks_per_rank, LineMemory* memory) {
  if (!memory->lines.empty()) return;
  const int acks = ranks_ * blocks_per_rank;
  const std::size_t ack_bytes = static_cast<std::size_t>(acks + 1) * kFlagStride * 8;  // and the launch counter
  memory->lines = peers_.allocate_zeroed([&](int) { return static_cast<std::size_t>(bytes); });
  memory->acks = peers_.allocate_zeroed([&](int) { return ack_bytes; });
  memory->launches = launch_counters_after(memory->acks, first_rank_, [&](int) { return acks; });
  log_.debug(LogSubsys::init, fmt::format("{} buffers: {} bytes and {} counters per rank", what, bytes, acks));
}

void ProtocolMemory::ready_low_latency(const LowLatencyShape& shape) {
  allocate_lines("low-latency", low_latency_buffer_bytes(ranks_, shape.max_bytes), shape.blocks_per_rank, &ll_);
}

void ProtocolMemory::ready_ll128(const LL128Shape& shape) {
  allocate_lines("LL128", ll128_buffer_bytes(ranks_, shape.max_bytes), shape.blocks_per_rank, &ll128_);
}

void ProtocolMemory::ready_direct(const DirectShape& shape, bool peer_flags) {
  if (!direct_.flags.empty()) return;
  const int count = direct_flag_count(ranks_, shape.blocks_per_rank);
  const std::size_t bytes = static_cast<std::size_t>(count + 1) * kFlagStride * sizeof(std::uint64_t);
  direct_.flags = peers_.allocate_zeroed([&](int) { return bytes; });
  direct_.launches = launch_counters_after(direct_.flags, first_rank_, [&](int) { return count; });
  if (peer_flags) direct_.peer_flags = peers_.allocate_zeroed([&](int) { return bytes; });
  log_.debug(LogSubsys::init, fmt::format("direct counters: {} bytes per rank{}", bytes, peer_flags ? ", twice" : ""));
}

}  // namespace canopy
