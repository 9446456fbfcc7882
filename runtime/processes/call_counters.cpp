// CallCounters through memfd pages passed over the FdChannel (SharedMemfds), and StallWatch (see call_counters.hpp).
#include "runtime/processes/call_counters.hpp"

#include "runtime/processes/signature_ring.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace canopy {
namespace {

constexpr std::size_t kPage = 4096;
constexpr std::uint32_t kCountersTag = 0x80000001u;  // beside IpcPeerMemory's steps (small numbers from 1)

// A process's memory: [0, 8) the calls made, [8, 12) the ProcessFailure, [16, kPage) its reason, NUL-terminated,
// written before the failure word is stored (release) and read after it is loaded (acquire); then from kPage its
// ring of call signatures. A whole number of pages.
constexpr std::size_t kFailureAt = 8;
constexpr std::size_t kReasonAt = 16;
constexpr std::size_t kRingAt = kPage;
constexpr std::size_t kBytes = kRingAt + kSignatureRingBytes;
static_assert(kBytes % kPage == 0);

std::atomic<std::uint64_t>* counter(void* page) { return static_cast<std::atomic<std::uint64_t>*>(page); }
std::atomic<std::uint32_t>* failure_word(void* page) {
  return reinterpret_cast<std::atomic<std::uint32_t>*>(static_cast<char*>(page) + kFailureAt);
}
void* ring(void* page) { return static_cast<char*>(page) + kRingAt; }

}  // namespace

Status CallCounters::share(FdChannel& channel, int process, int processes, std::unique_ptr<CallCounters>* out) {
  std::unique_ptr<CallCounters> c(new CallCounters());
  c->process_ = process;
  if (Status s = c->pages_.share(channel, kCountersTag, "the call counters' page", process, processes, kBytes, false);
      !s.ok())
    return s;
  void* mine = c->pages_.at(process);
  new (mine) std::atomic<std::uint64_t>(0);
  new (failure_word(mine)) std::atomic<std::uint32_t>(0);
  start_signature_ring(ring(mine));
  *out = std::move(c);
  return Status();
}

CallCounters::~CallCounters() = default;

void CallCounters::publish(std::uint64_t calls) {
  counter(pages_.at(process_))->store(calls, std::memory_order_release);
}

std::optional<CallMismatch> CallCounters::publish(const CallSignature& mine) {
  write_signature(ring(pages_.at(process_)), mine);
  publish(mine.call);
  // Dekker: this process's entry is stored before it reads the others', and every other process's before it reads
  // this one's, so of two processes making this call at once one at least sees the other's entry.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::optional<CallMismatch> found;
  for (int p = 0; p < processes() && !found; ++p) {
    if (p == process_) continue;
    CallSignature theirs;
    if (read_signature(ring(pages_.at(p)), mine.call, &theirs) == SignatureRead::whole && !theirs.same_call(mine))
      found = CallMismatch{p, theirs};
  }
  return found;
}

std::uint64_t CallCounters::of(int process) const {
  return counter(pages_.at(process))->load(std::memory_order_acquire);
}

void CallCounters::publish_failure(ProcessFailure kind, std::string_view why) {
  void* page = pages_.at(process_);
  if (kind == ProcessFailure::none || failure_word(page)->load(std::memory_order_relaxed) != 0) return;
  const std::size_t n = std::min(why.size(), kPage - kReasonAt - 1);
  char* reason = static_cast<char*>(page) + kReasonAt;
  std::memcpy(reason, why.data(), n);
  reason[n] = '\0';
  failure_word(page)->store(static_cast<std::uint32_t>(kind), std::memory_order_release);
}

std::optional<SeenFailure> CallCounters::failure_of_another() const {
  for (int p = 0; p < processes(); ++p) {
    if (p == process_) continue;
    const std::uint32_t word = failure_word(pages_.at(p))->load(std::memory_order_acquire);
    if (word == 0) continue;
    const char* reason = static_cast<const char*>(pages_.at(p)) + kReasonAt;
    SeenFailure seen;
    seen.process = p;
    seen.kind = word == static_cast<std::uint32_t>(ProcessFailure::aborted) ? ProcessFailure::aborted
                                                                          : ProcessFailure::failed;
    seen.why.assign(reason, strnlen(reason, kPage - kReasonAt));
    return seen;
  }
  return std::nullopt;
}

int StallWatch::check(std::chrono::steady_clock::time_point now, int self, std::uint64_t mine,
                      std::span<const std::uint64_t> theirs) {
  if (last_.size() != theirs.size()) {
    last_.assign(theirs.begin(), theirs.end());
    since_.assign(theirs.size(), now);
    behind_.assign(theirs.size(), false);
  }
  int stalled = -1;
  for (std::size_t p = 0; p < theirs.size(); ++p) {
    const bool behind = static_cast<int>(p) != self && theirs[p] < mine;
    // The clock runs from the later of its last call and the moment it fell behind: a process level with this one
    // may make no call for minutes (replaying CUDA graphs, computing) and still be on time for the next.
    if (theirs[p] != last_[p] || (behind && !behind_[p])) {
      last_[p] = theirs[p];
      since_[p] = now;
    }
    behind_[p] = behind;
    if (behind && stalled < 0 && now - since_[p] >= limit_) stalled = static_cast<int>(p);
  }
  return stalled;
}

std::chrono::milliseconds StallWatch::still_for(int p, std::chrono::steady_clock::time_point now) const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - since_.at(p));
}

}  // namespace canopy
