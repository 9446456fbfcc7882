// ProcessCallPath's calls (process_call_path.hpp): the caller's buffers and streams for its own ranks become a whole
// call (other ranks' entries placeholders, unchecked), its signature is published (and checked) in the shared pages,
// the protocol is chosen as if out of place (every process must choose alike, and only this one knows whether its
// buffers coincide), and the kernel launches on this process's device index only. The low-latency and LL128 kernels
// touch only their own rank's buffers, and so, under CANOPY_OWN_BUFFERS (the default), do the planned trees and the
// direct inbox kernels (KernelRules::as_run); with CANOPY_OWN_BUFFERS=0 the trees and the direct protocol read and
// write other ranks' buffers, so they run on the staging area (staging_area.hpp) with copies in and out on the
// caller's stream, as algorithm programs (run_program) always do. A large broadcast's, reduce's or allreduce's tail
// crosses the host rings beside them (process_call_host_ring.cpp); a large broadcast or reduce between two processes
// on two GPUs moves on the copy engines instead of the kernels (ProcessEngines; CANOPY_ENGINE_BYTES, from 64 and 256
// MiB by default), unless a buffer cannot be shared, and so does an allreduce where that size is given
// (process_call_engines.cpp).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "codegen/direct_source.hpp"
#include "core/error.hpp"
#include "dsl/algorithm.hpp"
#include "runtime/comm/group_rounds.hpp"
#include "runtime/comm/kernel_rules.hpp"
#include "runtime/processes/staged_sides.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/processes/process_call_path.hpp"

namespace canopy {

namespace {

Status copy_failed(const CollectiveCall& call, const char* what, int rank, cudaError_t e) {
  (void)cudaGetLastError();
  return Status(StatusCode::cuda_error, fmt::format("{} count {}: copying rank {}'s {} through the staging area "
                                                    "failed: {}",
                                                    call_name(call), call.count, rank, what, cudaGetErrorString(e)));
}

}  // namespace

Status ProcessCallPath::run(const CollectiveCall& given) {
  return kernels_.run(given, mutex_, failure_, first_own_rank(),
                      [this](const CollectiveCall& call) { return run_in_processes(call); });
}

Status ProcessCallPath::announce_call(const std::function<CallSignature()>& signature_of_call) {
  ++calls_;
  // The call's signature through the shared pages (no waiting: the second process to make a mismatched call finds
  // it, and fails the communicator), and under CANOPY_CHECK_CALLS=1 through the bootstrap root too: every process
  // then finds it there and fails the call alone, so a mismatch the pages found waits for the round trip (no process
  // would wait there for one that had failed already). Captured calls are checked at capture; replays make no calls.
  const CallCheck check_calls = layout_.config.check_calls;
  CallSignature signature;
  std::optional<CallMismatch> mismatch;
  if (check_calls != CallCheck::off) signature = signature_of_call();
  if (counters_ && check_calls != CallCheck::off)
    mismatch = counters_->publish(signature);
  else if (counters_)
    counters_->publish(calls_);
  if (check_calls == CallCheck::round_trip)
    if (Status s = agree_on_call(*group_, failure_, signature); !s.ok()) return s;
  if (mismatch) return mismatched_call(signature, *mismatch);
  return Status();
}

Status ProcessCallPath::fit_area(StagingArea& area, std::size_t send_bytes, std::size_t recv_bytes,
                                 const CollectiveCall& call, bool capturing, const char* what) {
  if (area.fits(send_bytes, recv_bytes)) return Status();
  if (capturing)
    return Status(StatusCode::unsupported,
                  fmt::format("{}: count {} needs a larger {}, which a CUDA graph capture cannot make: make one eager "
                              "call of this size first",
                              call_name(call), call.count, what));
  try {
    kernels_.drain();
    area.grow(*peers_, send_bytes, recv_bytes, /*keep_old=*/kernels_.device_epochs());  // graphs name the old area
  } catch (const Error& e) {
    return Status(StatusCode::cuda_error, fmt::format("{}: {}", call_name(call), e.what()));
  }
  return Status();
}

Status ProcessCallPath::ready_inboxes(const CollectiveCall& call, bool capturing) {
  const std::uint64_t bytes = direct_inbox_bytes(call.count, size_of(call.dtype), ranks());
  if (inboxes_.fits(0, bytes)) return Status();  // `inbox_` already names it
  if (Status s = fit_area(inboxes_, 0, bytes, call, capturing, "inbox area"); !s.ok()) return s;
  inbox_.resize(ranks());
  for (int r = 0; r < ranks(); ++r) inbox_[r] = inboxes_.recv(r);
  return Status();
}

Status ProcessCallPath::make_whole(const CollectiveCall& given, CollectiveCall* call, bool* capturing) {
  const int n = ranks();
  const int own = own_ranks();
  const int first = first_own_rank();
  if (static_cast<int>(given.send.size()) != own || static_cast<int>(given.recv.size()) != own ||
      static_cast<int>(given.streams.size()) != own)
    return Status(StatusCode::invalid_argument,
                  fmt::format("{}: got {} send buffers, {} receive buffers and {} streams: this process holds {} "
                              "rank{} ({}..{}) of {}, pass one of each per rank it holds",
                              call_name(given), given.send.size(), given.recv.size(), given.streams.size(), own,
                              own == 1 ? "" : "s", first, first + own - 1, n));
  // This process's entries, placeholders for the others (never checked nor used as buffers), in arrays the path
  // keeps (no allocation per call).
  whole_.send.assign(n, nullptr);
  whole_.recv.assign(n, nullptr);
  whole_.streams.assign(n, given.streams[0]);
  for (int i = 0; i < own; ++i) {
    whole_.send[first + i] = given.send[i];
    whole_.recv[first + i] = given.recv[i];
    whole_.streams[first + i] = given.streams[i];
  }
  *call = given;
  call->send = whole_.send;
  call->recv = whole_.recv;
  call->streams = whole_.streams;
  *capturing = false;
  kernels_.stream_ids().assign(n, 0);
  return check_call(*call, layout_.placement.ordinal_of_rank, kernels_.oracle(), capturing, kernels_.stream_ids(),
                    whole_.mine);
}

// A program's input and output are the same size on every rank: a whole buffer's count is `chunks` chunks, and the
// input and output buffers hold buffer_chunks of them.
std::uint64_t ProcessCallPath::rank_bytes(const CollectiveCall& call, int rank, bool send) const {
  const auto elem = static_cast<std::uint64_t>(size_of(call.dtype));
  if (call.program)
    return call.count / static_cast<std::uint64_t>(call.program->chunks()) *
           static_cast<std::uint64_t>(call.program->buffer_chunks(send ? algo::Buffer::input : algo::Buffer::output)) *
           elem;
  const int n = ranks();
  return (send ? send_elements(call.collective, call.count, n, rank, call.root)
               : recv_elements(call.collective, call.count, n, rank, call.root)) *
         elem;
}

std::pair<std::uint64_t, std::uint64_t> ProcessCallPath::staged_bytes(const CollectiveCall& call) const {
  std::uint64_t send_bytes = 0, recv_bytes = 0;
  for (int r = 0; r < ranks(); ++r) {
    send_bytes = std::max(send_bytes, rank_bytes(call, r, true));
    recv_bytes = std::max(recv_bytes, rank_bytes(call, r, false));
  }
  return {send_bytes, recv_bytes};
}

Status ProcessCallPath::prepare_in_processes(const CollectiveCall& given) {
  CollectiveCall call;
  bool capturing = false;
  if (Status s = make_whole(given, &call, &capturing); !s.ok()) return s;
  if (capturing)
    return Status(StatusCode::unsupported,
                  fmt::format("{}: prepare(call) inside a CUDA graph capture: prepare before capturing (a capture "
                              "cannot compile or allocate)",
                              call_name(call)));
  if (call.count == 0 || (ranks() == 1 && !call.program)) return Status();
  const CollectiveSpec spec = kernels_.call_spec(call, false);
  PreparedCollective* p = nullptr;
  if (Status s = kernels_.get(spec, &p); !s.ok()) return s;
  if (!spec.program) kernels_.cache().remember(spec, p);
  // The areas the call runs through, grown now (a capture cannot grow them): the inboxes of the direct inbox
  // kernels, or the staging area of the staged kernels.
  if (spec.direct && spec.own_buffers) return ready_inboxes(call, false);
  if (spec.low_latency || spec.ll128 || spec.own_buffers) return Status();
  const auto [send_bytes, recv_bytes] = staged_bytes(call);
  return fit_area(staging_, send_bytes, recv_bytes, call, false, "staging area");
}

Status ProcessCallPath::run_in_processes(const CollectiveCall& given) {
  CollectiveCall call;
  bool capturing = false;
  if (Status s = make_whole(given, &call, &capturing); !s.ok()) return s;
  CallProfile& profile = kernels_.profile();
  profile.mark(CallProfile::check);
  if (Status s = announce_call([&] { return signature_of(call); }); !s.ok()) return s;
  if (call.count == 0) return Status();
  if (ranks() == 1 && !call.program) return kernels_.local_copy(given);
  // A large broadcast or reduce (and, where their size is given, allreduce) between two processes on the copy engines
  // (ProcessEngines).
  const bool on_engines =
      !capturing && !call.program && engines_take(call.collective, call.count * size_of(call.dtype));
  // A large broadcast's, reduce's or allreduce's tail through the host rings (ProcessHostRing), beside the kernels'
  // or the copy engines' head: every process splits alike (the same settings and topology). Captured calls run on the
  // kernels alone.
  const std::uint64_t staged =
      rings_move(call.collective) && !capturing && !call.program
          ? kernels_.offload()->staged_count(call.collective, call.count, call.dtype, call.root, on_engines)
          : 0;
  call.count -= staged;
  if (on_engines) {
    // Where the publishing process cannot share its buffers, the kernels move the same head.
    bool moved = false;
    const auto on_engines_call = call.collective == Collective::reduce      ? &ProcessCallPath::reduce_on_engines
                                 : call.collective == Collective::allreduce ? &ProcessCallPath::allreduce_on_engines
                                                                            : &ProcessCallPath::broadcast_on_engines;
    const Status s = (this->*on_engines_call)(call, staged, given.streams, &moved);
    if (!s.ok() || moved) return s;
  }
  const CollectiveSpec spec = kernels_.call_spec(call, false, call.count + staged);
  PreparedCollective* p = nullptr;
  if (Status s = kernels_.kernel_for(spec, call, capturing, "make one eager call of this kind before capturing", &p);
      !s.ok())
    return s;
  profile.mark(CallProfile::choose);
  // The ring's side stream starts after what the caller's streams hold before the kernels.
  if (staged > 0)
    if (Status s = host_ring_->fork(given.streams); !s.ok()) return s;
  // CANOPY_PEER_BUFFERS: the direct kernels on both processes' own buffers, where both can share them
  // (process_call_peer_buffers.cpp); eager calls only, as on the copy engines.
  if (spec.direct && spec.own_buffers && !spec.two_shot && peer_buffers_across() && !capturing && staged == 0) {
    bool ran = false;
    const Status s = direct_on_peer_buffers(call, spec, &ran);
    if (!s.ok() || ran) return s;
  }
  // Kernels that touch only their own rank's buffers run on the caller's: LL, LL128, and under CANOPY_OWN_BUFFERS
  // the planned trees (every transfer through the receiver's FIFO) and the direct inbox kernels (through the inbox
  // area, grown to the call here).
  if (spec.direct && spec.own_buffers)
    if (Status s = ready_inboxes(call, capturing); !s.ok()) return s;
  if (spec.low_latency || spec.ll128 || spec.own_buffers) {
    const Status s = kernels_.launch(*p, spec, call, capturing, staged, inbox_);
    profile.mark(CallProfile::launch);
    return s.ok() && staged > 0 ? stage_through_host(call, staged, given.streams) : s;
  }
  return run_staged(*p, spec, call, capturing, staged, given.streams);
}

Status ProcessCallPath::run_staged(PreparedCollective& p, const CollectiveSpec& spec, const CollectiveCall& call,
                                   bool capturing, std::uint64_t staged, std::span<const cudaStream_t> own_streams) {
  const int n = ranks();
  const int own = own_ranks();
  const int first = first_own_rank();
  const std::span<const void* const> send = call.send;
  const std::span<void* const> recv = call.recv;
  const std::span<const cudaStream_t> streams = call.streams;
  CallProfile& profile = kernels_.profile();
  const auto [send_bytes, recv_bytes] = staged_bytes(call);
  if (Status s = fit_area(staging_, send_bytes, recv_bytes, call, capturing, "staging area"); !s.ok()) return s;
  std::vector<const void*>& staged_send = whole_.staged_send;
  std::vector<void*>& staged_recv = whole_.staged_recv;
  staged_send.resize(n);
  staged_recv.resize(n);
  // Another process's ranks always by their staging regions (this kernel touches only those the rule stages there);
  // this process's own ranks by their own buffers where no other rank touches them (CANOPY_STAGE_ONLY_SHARED).
  std::vector<StagedSides>& sides = whole_.sides;
  sides.assign(n, StagedSides{});
  for (int r = 0; r < n; ++r) {
    if (r >= first && r < first + own) sides[r] = staged_sides(spec, r, layout_.config.stage_only_shared);
    staged_send[r] = sides[r].send ? staging_.send(r) : send[r];
    staged_recv[r] = sides[r].recv ? staging_.recv(r) : recv[r];
  }
  CurrentDevice keep;
  const Placement& placement = layout_.placement;
  const int device = placement.device_of_rank[first];
  if (cudaError_t e = cudaSetDevice(placement.ordinals[device]); e != cudaSuccess)
    return copy_failed(call, "device", first, e);
  // The staging area is every call's: a call on another stream than the last waits for the last call's copies and
  // kernel before copying in (FSDP2 issues its all-gathers and reduce-scatters on two streams), and its copies out
  // are marked done below, so the next call waits for them too.
  DeviceOrder& order = kernels_.order();
  if (!capturing)
    for (int i = 0; i < own; ++i) {
      const int r = first + i;
      unsigned long long id = kernels_.stream_ids()[r];
      cudaError_t e = id ? cudaSuccess : stream_id(streams[r], &id);
      if (e == cudaSuccess) e = order_stream(order, device, streams[r], id);
      if (e != cudaSuccess) return copy_failed(call, "stream order", r, e);
    }
  for (int i = 0; i < own; ++i) {
    const int r = first + i;
    const std::uint64_t b = rank_bytes(call, r, true);
    if (b == 0 || !sides[r].send) continue;
    if (cudaError_t e = cudaMemcpyAsync(staging_.send(r), send[r], b, cudaMemcpyDeviceToDevice, streams[r]);
        e != cudaSuccess)
      return copy_failed(call, "input", r, e);
  }
  CollectiveCall staged_call = call;
  staged_call.send = staged_send;
  staged_call.recv = staged_recv;
  profile.mark(CallProfile::stage);
  if (Status s = kernels_.launch(p, spec, staged_call, capturing, staged, inbox_); !s.ok()) return s;
  profile.mark(CallProfile::launch);
  for (int i = 0; i < own; ++i) {
    const int r = first + i;
    const std::uint64_t b = rank_bytes(call, r, false);
    if (b == 0 || !sides[r].recv) continue;
    if (cudaError_t e = cudaMemcpyAsync(recv[r], staged_recv[r], b, cudaMemcpyDeviceToDevice, streams[r]);
        e != cudaSuccess)
      return copy_failed(call, "output", r, e);
  }
  if (!capturing)
    for (int i = 0; i < own; ++i)
      if (cudaError_t e = mark_done(order, device, streams[first + i]); e != cudaSuccess)
        return copy_failed(call, "stream order", first + i, e);
  profile.mark(CallProfile::stage);
  return staged > 0 ? stage_through_host(call, staged, own_streams) : Status();
}

}  // namespace canopy
