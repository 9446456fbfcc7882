// ProcessCallPath (process_call_path.hpp): what a call of a size would take, the agreements with the other processes
// (kernels, calls), failure and teardown. The join is in process_join.cpp, the calls in process_call*.cpp.
#include "runtime/processes/process_call_path.hpp"

#include <fmt/format.h>

#include <chrono>

#include "runtime/comm/group_rounds.hpp"
#include "runtime/comm/kernel_rules.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

ProcessCallPath::ProcessCallPath(Logger log) { layout_.log = std::move(log); }

ProcessCallPath::~ProcessCallPath() {
  kernels_.report_profile(first_own_rank(), own_ranks());
  kernels_.stop();  // the monitor still watches: a lost peer ends these waits
  // No more watching once this process's work is done: a process that passes the barrier below first and exits is
  // not a loss. A peer lost during the barrier fails it through the bootstrap.
  monitor_.reset();
  // Every process's copies out of the others' rings are done before any frees its own (send_recv); after a failure,
  // or a send whose receive never came, the lanes are released until idle.
  if (pairs_)
    if (Status s = pairs_->drain(std::chrono::seconds(60)); !s.ok())
      layout_.log.warn(LogSubsys::init, "leaving the communicator: " + s.message());
  // Every process's kernels are done before any leaves, so none takes another's exit for a failure.
  if (group_ && group_->bootstrap && !failure_.failed()) {
    if (Status s = group_->bootstrap->barrier(); !s.ok())
      layout_.log.warn(LogSubsys::init, "leaving the communicator: " + s.message());
  }
  kernels_.drop_offload();  // waits for the copy engines' and the host path's work
  CurrentDevice keep;
  kernels_.unload();
  if (peers_) staging_.release(*peers_);
  if (peers_) inboxes_.release(*peers_);
  if (peers_ && pairs_) pairs_->release_rings(*peers_);
  pairs_.reset();
  peers_.reset();
}

std::int64_t ProcessCallPath::tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const {
  return kernels_.rules().tuned_chunk(collective, count, dtype);
}

// The table's sizes, and what the join made the copy engines across processes for.
bool ProcessCallPath::engines_take(Collective collective, std::uint64_t bytes) const {
  return kernels_.protocols().engine_sized(collective, bytes) && engines_move(collective);
}

std::uint64_t ProcessCallPath::staged_count(Collective collective, std::uint64_t count, DataType dtype, int root) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!rings_move(collective)) return 0;
  return kernels_.offload()->staged_count(collective, count, dtype, root,
                                          engines_take(collective, count * static_cast<std::uint64_t>(size_of(dtype))));
}

Communicator::Choice ProcessCallPath::choice(Collective collective, std::uint64_t count, DataType dtype, int root,
                                             bool in_place) {
  return kernels_.choice(collective, count, dtype, root, in_place, mutex_);
}

// As if out of place: every process must choose alike, and only this one knows whether its buffers coincide.
CollectiveSpec ProcessCallPath::spec_of(const CollectiveCall& call, bool) {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.call_spec(kernels_call(call), false);
}

Status ProcessCallPath::prepare(std::span<const CollectiveSpec> specs) {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.prepare(specs);
}

Status ProcessCallPath::prepare(const CollectiveCall& call) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kernels_.broken()) return kernels_.broken_status();
  // This process's ranks' buffers, made whole; every process prepares the same calls.
  if (Status s = prepare_in_processes(kernels_call(call)); !s.ok()) return s;
  if (call.count == 0 || (ranks() == 1 && !call.program)) return Status();  // one rank: nothing to load
  if (runs_as_sum(call)) return kernels_.ready_division();                  // avg's division kernel
  return Status();                                                          // its kernel and areas are ready
}

Status ProcessCallPath::info(const CollectiveSpec& spec, CollectiveInfo* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.info(spec, out);
}

Status ProcessCallPath::scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype,
                              const void* device_scalar, const void* host_scalar, cudaStream_t stream) {
  if (Status s = check_own_rank("scale", rank, first_own_rank(), own_ranks()); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.failed()) return failure_.status();
  return kernels_.scale(rank, out, in, count, dtype, device_scalar, host_scalar, stream);
}

Status ProcessCallPath::combining_kernels(const CombineKernels** out) {
  return kernels_.combining_kernels(first_own_rank(), out);
}

Status ProcessCallPath::exchange(std::string mine, std::vector<std::string>* all) {
  return exchange_in_group(*group_, mutex_, failure_, std::move(mine), all);
}

Status ProcessCallPath::split(int color, int key, const CommunicatorOptions& options, const JoinPath& join,
                              std::unique_ptr<CallPath>* out) {
  return split_group(*group_, mutex_, failure_, layout_, own_ranks(), color, key, options, join, out);
}

void ProcessCallPath::fail(const std::string& why, ProcessFailure kind) {
  failure_.fail(why, kind == ProcessFailure::aborted, layout_.log, [&] {
    kernels_.abort_launches();
    if (host_ring_) host_ring_->release();  // no side stream waits for a lost process's ring
    if (engines_across_) engines_across_->release();
    if (pairs_) pairs_->release();  // no lane waits for a lost process's copies
    if (counters_) counters_->publish_failure(kind, why);
  });
}

// Fails the communicator, then waits for its launches (they end promptly: every wait gives up).
Status ProcessCallPath::fail_and_drain(const std::string& why, ProcessFailure kind) {
  fail(why, kind);
  std::lock_guard<std::mutex> lock(mutex_);
  kernels_.drain();
  return Status();
}

Status ProcessCallPath::abort() {
  return fail_and_drain("the communicator was aborted (Communicator::abort): every call fails from now on",
                        ProcessFailure::aborted);
}

Status ProcessCallPath::fail(const std::string& why) { return fail_and_drain(why, ProcessFailure::failed); }

void ProcessCallPath::leave_at_exit() {
  monitor_.reset();  // joins its thread (it polls every 100 ms)
  // CANOPY_WATCHDOG_S: its thread reads the GPUs. Calls use it under the mutex; a thread stuck in a call keeps it.
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (lock.owns_lock()) kernels_.stop_watchdog();
}

Status ProcessCallPath::agree_on_kernels(const std::vector<std::string>& keys) {
  std::string mine;
  for (const std::string& k : keys) mine += k + "\n";
  std::vector<std::string> all;
  if (Status s = group_->bootstrap->allgather(mine, &all); !s.ok()) return failure_.failed() ? failure_.status() : s;
  for (std::size_t p = 0; p < all.size(); ++p)
    if (all[p] != all[0])
      return Status(StatusCode::invalid_argument,
                    fmt::format("process {} prepared other kernels than process 0 ({} against {}): every process must "
                                "plan alike (same topology, settings and tuning.json) and make the same calls in the "
                                "same order",
                                p, all[p].substr(0, 16), all[0].substr(0, 16)));
  return Status();
}

CallSignature ProcessCallPath::signature_of(const CollectiveCall& call) {
  if (!call.program) return call_signature(call, calls_, 0);
  // By its canonical copy, which lives as long as the cache (a caller's object may be another program later).
  CollectiveSpec spec;
  spec.program = std::shared_ptr<const algo::Program>(std::shared_ptr<const algo::Program>(), call.program);
  const algo::Program* canonical = kernels_.cache().canonical(spec).program.get();
  auto it = program_identities_.find(canonical);
  if (it == program_identities_.end()) it = program_identities_.emplace(canonical, program_identity(*canonical)).first;
  return call_signature(call, calls_, it->second);
}

Status ProcessCallPath::mismatched_call(const CallSignature& mine, const CallMismatch& found) {
  const std::string why = mismatched_calls_message(group_->process, mine, found.process, found.theirs,
                                                   [&](int q) { return describe_process(group_->facts[q], q, false); });
  fail(why, ProcessFailure::failed);  // published in this process's page: the others' calls fail too
  return Status(StatusCode::invalid_argument, why);
}

}  // namespace canopy
