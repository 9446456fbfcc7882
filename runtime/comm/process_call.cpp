// A multi-process communicator's call (LegacyState::run_in_processes): the caller's buffers and streams for
// its own ranks become a whole call (other ranks' entries placeholders, unchecked), the protocol is chosen as if out
// of place (every process must choose alike, and only this one knows whether its buffers coincide), and the kernel
// launches on this process's device index only. The low-latency and LL128 kernels touch only their own rank's
// buffers, and so, under CANOPY_OWN_BUFFERS (the default), do the planned trees and the direct inbox kernels
// (State::as_run); with CANOPY_OWN_BUFFERS=0 the trees and the direct protocol read and write other ranks' buffers, so
// they run on the staging area (staging_area.hpp) with copies in and out on the caller's stream, as algorithm programs
// (run_program) always do. A large broadcast's, reduce's or allreduce's tail crosses the host rings (ProcessHostRing)
// beside them; a large broadcast or reduce between two processes on two GPUs moves on the copy engines instead of the
// kernels (ProcessEngines; CANOPY_ENGINE_BYTES, from 64 and 256 MiB by default), unless a buffer cannot be shared, and
// so does an allreduce where that size is given (process_call_engines.cpp).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "codegen/direct_source.hpp"
#include "core/error.hpp"
#include "dsl/algorithm.hpp"
#include "runtime/comm/call_signature.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/communicator_state.hpp"
#include "runtime/comm/staged_sides.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/gpu_devices.hpp"

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

Status copy_failed(const CollectiveCall& call, const char* what, int rank, cudaError_t e) {
  (void)cudaGetLastError();
  return Status(StatusCode::cuda_error, fmt::format("{} count {}: copying rank {}'s {} through the staging area "
                                                    "failed: {}",
                                                    call_name(call), call.count, rank, what, cudaGetErrorString(e)));
}

}  // namespace

Status LegacyState::agree_on_kernels(const std::vector<std::string>& keys) {
  std::string mine;
  for (const std::string& k : keys) mine += k + "\n";
  std::vector<std::string> all;
  if (Status s = group->bootstrap->allgather(mine, &all); !s.ok()) return failed ? failure_status() : s;
  for (std::size_t p = 0; p < all.size(); ++p)
    if (all[p] != all[0])
      return Status(StatusCode::invalid_argument,
                    fmt::format("process {} prepared other kernels than process 0 ({} against {}): every process must "
                                "plan alike (same topology, settings and tuning.json) and make the same calls in the "
                                "same order",
                                p, all[p].substr(0, 16), all[0].substr(0, 16)));
  return Status();
}

CallSignature LegacyState::signature_of(const CollectiveCall& call) {
  if (!call.program) return call_signature(call, calls, 0);
  if (!cache) return call_signature(call, calls, program_identity(*call.program));  // across hosts: no kernels here
  // By its canonical copy, which lives as long as the cache (a caller's object may be another program later).
  CollectiveSpec spec;
  spec.program = std::shared_ptr<const algo::Program>(std::shared_ptr<const algo::Program>(), call.program);
  const algo::Program* canonical = cache->canonical(spec).program.get();
  auto it = program_identities.find(canonical);
  if (it == program_identities.end()) it = program_identities.emplace(canonical, program_identity(*canonical)).first;
  return call_signature(call, calls, it->second);
}

Status LegacyState::agree_on_call(const CallSignature& mine) {
  std::vector<std::string> all;
  if (Status s = group->bootstrap->allgather(describe_call(mine), &all); !s.ok())
    return failed ? failure_status() : s;
  for (std::size_t p = 0; p < all.size(); ++p)
    if (all[p] != all[0]) {
      const auto who = [&](std::size_t q) { return describe_process(group->facts[q], static_cast<int>(q), false); };
      return Status(StatusCode::invalid_argument, mismatched_calls_message(who(0), all[0], who(p), all[p]));
    }
  return Status();
}

Status LegacyState::mismatched_call(const CallSignature& mine, const CallMismatch& found) {
  const std::string why = mismatched_calls_message(group->process, mine, found.process, found.theirs, [&](int q) {
    return describe_process(group->facts[q], q, false);
  });
  fail(why);  // published in this process's page: the others' calls, which would wait for this one's, fail too
  return Status(StatusCode::invalid_argument, why);
}

Status LegacyState::fit_area(StagingArea& area, std::size_t send_bytes, std::size_t recv_bytes,
                                     const CollectiveCall& call, bool capturing, const char* what) {
  if (area.fits(send_bytes, recv_bytes)) return Status();
  if (capturing)
    return Status(StatusCode::unsupported,
                  fmt::format("{}: count {} needs a larger {}, which a CUDA graph capture cannot make: make one eager "
                              "call of this size first",
                              call_name(call), call.count, what));
  try {
    wait_for_launches(order, placement.ordinals);
    area.grow(*peers, send_bytes, recv_bytes, /*keep_old=*/device_epochs);  // graphs name the old area
  } catch (const Error& e) {
    return Status(StatusCode::cuda_error, fmt::format("{}: {}", call_name(call), e.what()));
  }
  return Status();
}

Status LegacyState::ready_inboxes(const CollectiveCall& call, bool capturing) {
  const std::uint64_t bytes = direct_inbox_bytes(call.count, size_of(call.dtype), ranks());
  if (inboxes.fits(0, bytes)) return Status();  // `inbox` already names it
  if (Status s = fit_area(inboxes, 0, bytes, call, capturing, "inbox area"); !s.ok()) return s;
  inbox.resize(ranks());
  for (int r = 0; r < ranks(); ++r) inbox[r] = inboxes.recv(r);
  return Status();
}

Status LegacyState::make_whole(const CollectiveCall& given, CollectiveCall* call, bool* capturing) {
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
  // This process's entries, placeholders for the others (never checked nor used as buffers), in arrays the State
  // keeps (no allocation per call).
  whole.send.assign(n, nullptr);
  whole.recv.assign(n, nullptr);
  whole.streams.assign(n, given.streams[0]);
  for (int i = 0; i < own; ++i) {
    whole.send[first + i] = given.send[i];
    whole.recv[first + i] = given.recv[i];
    whole.streams[first + i] = given.streams[i];
  }
  *call = given;
  call->send = whole.send;
  call->recv = whole.recv;
  call->streams = whole.streams;
  *capturing = false;
  call_stream_ids.assign(n, 0);
  return check_call(*call, placement.ordinal_of_rank, oracle, capturing, call_stream_ids, whole.mine);
}

// A program's input and output are the same size on every rank: a whole buffer's count is `chunks` chunks, and the
// input and output buffers hold buffer_chunks of them.
std::uint64_t LegacyState::rank_bytes(const CollectiveCall& call, int rank, bool send) const {
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

std::pair<std::uint64_t, std::uint64_t> LegacyState::staged_bytes(const CollectiveCall& call) const {
  std::uint64_t send_bytes = 0, recv_bytes = 0;
  for (int r = 0; r < ranks(); ++r) {
    send_bytes = std::max(send_bytes, rank_bytes(call, r, true));
    recv_bytes = std::max(recv_bytes, rank_bytes(call, r, false));
  }
  return {send_bytes, recv_bytes};
}

Status LegacyState::prepare_in_processes(const CollectiveCall& given) {
  CollectiveCall call;
  bool capturing = false;
  if (Status s = make_whole(given, &call, &capturing); !s.ok()) return s;
  if (capturing)
    return Status(StatusCode::unsupported,
                  fmt::format("{}: prepare(call) inside a CUDA graph capture: prepare before capturing (a capture "
                              "cannot compile or allocate)",
                              call_name(call)));
  if (call.count == 0 || (ranks() == 1 && !call.program)) return Status();
  const CollectiveSpec spec = call_spec(call, false);
  PreparedCollective* p = nullptr;
  if (Status s = get(spec, &p); !s.ok()) return s;
  if (!spec.program) cache->remember(spec, p);
  // The areas the call runs through, grown now (a capture cannot grow them): the inboxes of the direct inbox
  // kernels, or the staging area of the staged kernels.
  if (spec.direct && spec.own_buffers) return ready_inboxes(call, false);
  if (spec.low_latency || spec.ll128 || spec.own_buffers) return Status();
  const auto [send_bytes, recv_bytes] = staged_bytes(call);
  return fit_area(staging, send_bytes, recv_bytes, call, false, "staging area");
}

Status LegacyState::run_in_processes(const CollectiveCall& given) {
  const int n = ranks();
  const int own = own_ranks();
  const int first = first_own_rank();
  CollectiveCall call;
  bool capturing = false;
  if (Status s = make_whole(given, &call, &capturing); !s.ok()) return s;
  const std::span<const void* const> send = call.send;
  const std::span<void* const> recv = call.recv;
  const std::span<const cudaStream_t> streams = call.streams;
  profile.mark(CallProfile::check);
  ++calls;
  // The call's signature through the shared pages (no waiting: the second process to make a mismatched call finds
  // it, and fails the communicator), and under CANOPY_CHECK_CALLS=1 through the bootstrap root too: every process
  // then finds it there and fails the call alone, so a mismatch the pages found waits for the round trip (no process
  // would wait there for one that had failed already). Captured calls are checked at capture; replays make no calls.
  CallSignature signature;
  std::optional<CallMismatch> mismatch;
  if (config.check_calls != CallCheck::off) signature = signature_of(call);
  if (counters && config.check_calls != CallCheck::off)
    mismatch = counters->publish(signature);
  else if (counters)
    counters->publish(calls);
  if (config.check_calls == CallCheck::round_trip)
    if (Status s = agree_on_call(signature); !s.ok()) return s;
  if (mismatch) return mismatched_call(signature, *mismatch);
  if (call.count == 0) return Status();
  if (n == 1 && !call.program) return local_copy(given);
  // A large broadcast or reduce (and, where their size is given, allreduce) between two processes on the copy engines
  // (ProcessEngines).
  const bool on_engines =
      !capturing && !call.program && engines_take(call.collective, call.count * size_of(call.dtype));
  // A large broadcast's, reduce's or allreduce's tail through the host rings (ProcessHostRing), beside the kernels'
  // or the copy engines' head: every process splits alike (the same settings and topology). Captured calls run on the
  // kernels alone.
  const std::uint64_t staged =
      rings_move(call.collective) && !capturing && !call.program
          ? offload->staged_count(call.collective, call.count, call.dtype, call.root, on_engines)
          : 0;
  call.count -= staged;
  if (on_engines) {
    // Where the publishing process cannot share its buffers, the kernels move the same head.
    bool moved = false;
    const auto on_engines_call = call.collective == Collective::reduce      ? &LegacyState::reduce_on_engines
                                 : call.collective == Collective::allreduce ? &LegacyState::allreduce_on_engines
                                                                            : &LegacyState::broadcast_on_engines;
    const Status s = (this->*on_engines_call)(call, staged, given.streams, &moved);
    if (!s.ok() || moved) return s;
  }
  const CollectiveSpec spec = call_spec(call, false, call.count + staged);
  // A program's spec holds the program: it is looked up (canonical) on every call, as in one process.
  PreparedCollective* p = spec.program ? nullptr : cache->repeat(spec);
  if (!p && capturing && !(p = cache->find(spec)))
    return Status(StatusCode::unsupported,
                  fmt::format("{}: count {} needs the kernel for {}, not loaded yet, and a CUDA graph capture cannot "
                              "compile and load one: make one eager call of this kind before capturing",
                              call_name(call), call.count, spec_text(spec)));
  if (!p) {
    if (Status s = get(spec, &p); !s.ok()) return s;
    if (!spec.program) cache->remember(spec, p);
  }
  profile.mark(CallProfile::choose);
  // The ring's side stream starts after what the caller's streams hold before the kernels.
  if (staged > 0)
    if (Status s = host_ring->fork(given.streams); !s.ok()) return s;
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
    const Status s = launch_kernels(*p, spec, call, capturing, staged);
    profile.mark(CallProfile::launch);
    return s.ok() && staged > 0 ? stage_through_host(call, staged, given.streams) : s;
  }

  // Staged: every rank's buffers are its staging regions.
  const auto [send_bytes, recv_bytes] = staged_bytes(call);
  if (Status s = fit_area(staging, send_bytes, recv_bytes, call, capturing, "staging area"); !s.ok()) return s;
  std::vector<const void*>& staged_send = whole.staged_send;
  std::vector<void*>& staged_recv = whole.staged_recv;
  staged_send.resize(n);
  staged_recv.resize(n);
  // Another process's ranks always by their staging regions (this kernel touches only those the rule stages there);
  // this process's own ranks by their own buffers where no other rank touches them (CANOPY_STAGE_ONLY_SHARED).
  std::vector<StagedSides>& sides = whole.sides;
  sides.assign(n, StagedSides{});
  for (int r = 0; r < n; ++r) {
    if (r >= first && r < first + own) sides[r] = staged_sides(spec, r, config.stage_only_shared);
    staged_send[r] = sides[r].send ? staging.send(r) : send[r];
    staged_recv[r] = sides[r].recv ? staging.recv(r) : recv[r];
  }
  CurrentDevice keep;
  const int device = placement.device_of_rank[first];
  if (cudaError_t e = cudaSetDevice(placement.ordinals[device]); e != cudaSuccess)
    return copy_failed(call, "device", first, e);
  // The staging area is every call's: a call on another stream than the last waits for the last call's copies and
  // kernel before copying in (FSDP2 issues its all-gathers and reduce-scatters on two streams), and its copies out
  // are marked done below, so the next call waits for them too.
  if (!capturing)
    for (int i = 0; i < own; ++i) {
      const int r = first + i;
      unsigned long long id = call_stream_ids[r];
      cudaError_t e = id ? cudaSuccess : stream_id(streams[r], &id);
      if (e == cudaSuccess) e = order_stream(order, device, streams[r], id);
      if (e != cudaSuccess) return copy_failed(call, "stream order", r, e);
    }
  for (int i = 0; i < own; ++i) {
    const int r = first + i;
    const std::uint64_t b = rank_bytes(call, r, true);
    if (b == 0 || !sides[r].send) continue;
    if (cudaError_t e = cudaMemcpyAsync(staging.send(r), send[r], b, cudaMemcpyDeviceToDevice, streams[r]);
        e != cudaSuccess)
      return copy_failed(call, "input", r, e);
  }
  CollectiveCall staged_call = call;
  staged_call.send = staged_send;
  staged_call.recv = staged_recv;
  profile.mark(CallProfile::stage);
  if (Status s = launch_kernels(*p, spec, staged_call, capturing, staged); !s.ok()) return s;
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
  return staged > 0 ? stage_through_host(call, staged, given.streams) : Status();
}

Status LegacyState::stage_through_host(const CollectiveCall& head, std::uint64_t staged,
                                               std::span<const cudaStream_t> streams) {
  const Status s = head.collective == Collective::reduce      ? reduce_through_host(head, staged)
                   : head.collective == Collective::allreduce ? allreduce_through_host(head, staged)
                                                              : broadcast_through_host(head, staged);
  const Status joined = s.ok() ? host_ring->join(streams) : s;
  if (!joined.ok()) {
    broken = true;  // the ring's words may be out of step with the other processes'
    broken_why = joined.message();
  }
  return joined;
}

Status LegacyState::broadcast_through_host(const CollectiveCall& head, std::uint64_t staged) {
  const int own = own_ranks();
  const int first = first_own_rank();
  const std::size_t elem = size_of(head.dtype);
  const std::size_t offset = head.count * elem;  // the kernels moved the head, `head.count` elements
  const std::size_t bytes = staged * elem;
  std::vector<void*> targets;
  for (int i = 0; i < own; ++i) targets.push_back(static_cast<char*>(head.recv[first + i]) + offset);
  const int root_process = placement.device_of_rank[head.root];  // a process is its device index
  return placement.here[root_process]
             ? host_ring->send(static_cast<const char*>(head.send[head.root]) + offset, targets, bytes)
             : host_ring->receive(root_process, targets, bytes);
}

// Each process other than the root's sends its ranks' tails through its own ring; the root's gathers them and
// combines them with its own ranks' tails in rank order (the op of the kernels' call: avg runs as a sum, divided
// after); every other process counts the chunks of the rings it does not touch.
Status LegacyState::reduce_through_host(const CollectiveCall& head, std::uint64_t staged) {
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
      if (p != me && p != root_process) host_ring->gather_pass(p, ranks_of_process[p], root_process, bytes);
    std::vector<const void*> sources;
    for (int i = 0; i < own_ranks(); ++i) sources.push_back(static_cast<const char*>(head.send[first + i]) + offset);
    return host_ring->gather_send(root_process, sources, bytes);
  }
  const CombineKernels* kernels = nullptr;
  if (Status s = offload->combine_for(placement.gpus[root_process].arch, &kernels); !s.ok()) return s;
  if (Status s = host_ring->gather_receive(ranks_of_process, bytes); !s.ok()) return s;
  return host_ring->combine(*kernels, static_cast<char*>(head.recv[head.root]) + offset,
                            tails_in_rank_order(placement, *host_ring, head, offset, root_process), staged, head.dtype,
                            head.op);
}

// Every process sends its ranks' tails through its own ring and gathers every other process's (exchange), then
// combines them all in rank order into its first rank's output (the same order, so the same result, in every process;
// the op of the kernels' call: avg runs as a sum, divided after), and copies that to its other ranks' outputs. In
// place, the first rank's output is its input: the combining kernel reads each element before writing it, and the
// other ranks' inputs are read before their outputs are written.
Status LegacyState::allreduce_through_host(const CollectiveCall& head, std::uint64_t staged) {
  const int own = own_ranks();
  const int first = first_own_rank();
  const std::size_t elem = size_of(head.dtype);
  const std::size_t offset = head.count * elem;
  const std::size_t bytes = staged * elem;
  const int me = placement.device_of_rank[first];
  const CombineKernels* kernels = nullptr;
  if (Status s = offload->combine_for(placement.gpus[me].arch, &kernels); !s.ok()) return s;
  std::vector<const void*> mine;
  for (int i = 0; i < own; ++i) mine.push_back(static_cast<const char*>(head.send[first + i]) + offset);
  if (Status s = host_ring->exchange(mine, ranks_per_process(placement), bytes); !s.ok()) return s;
  char* out = static_cast<char*>(head.recv[first]) + offset;
  if (Status s = host_ring->combine(*kernels, out, tails_in_rank_order(placement, *host_ring, head, offset, me),
                                    staged, head.dtype, head.op);
      !s.ok())
    return s;
  std::vector<void*> others;
  for (int i = 1; i < own; ++i) others.push_back(static_cast<char*>(head.recv[first + i]) + offset);
  return host_ring->copy_local(out, others, bytes);
}

}  // namespace canopy
