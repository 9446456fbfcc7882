// CallCounters: how many calls each process of a multi-process communicator has made, in shared host memory per
// process (a memfd each process makes, writes alone and passes to the others over the FdChannel, which map it
// read-only): a call costs one store. StallWatch reads them to find a process that stopped calling: it has made fewer
// calls than this one (so this one's latest call waits for it) and none for the stall limit since it fell behind. The
// same memory says when its process's communicator failed or was aborted, and why (published once), so that the
// others, whose calls would wait for it, fail too within the monitor's period instead of hanging. After that page, a
// ring of the process's last call signatures (signature_ring.hpp): publishing a call's signature compares it with the
// same call's signature of every other process that has already published it (Dekker's pattern: of two processes
// making call k at once, at least one sees the other's), so mismatched calls are caught without anyone waiting.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "runtime/comm/call_signature.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"
#include "runtime/transport/ipc/shared_memfds.hpp"

namespace canopy {

// How a process's communicator ended before its time, as its page says.
enum class ProcessFailure : std::uint32_t {
  none = 0,
  failed = 1,   // an error (a lost peer, a stall, a call refused in this process alone): the others must fail too
  aborted = 2,  // its user aborted it (Communicator::abort, ncclCommAbort): it makes no more calls
};

// Another process's signature of a call that differs from this process's.
struct CallMismatch {
  int process = -1;
  CallSignature theirs;
};

// Another process's published failure.
struct SeenFailure {
  int process = -1;
  ProcessFailure kind = ProcessFailure::none;
  std::string why;  // its own message (cut to what the page holds)
};

class CallCounters {
 public:
  // This process is `process` of `processes`; every process calls it together (one step on `channel`).
  static Status share(FdChannel& channel, int process, int processes, std::unique_ptr<CallCounters>* out);
  ~CallCounters();
  CallCounters(const CallCounters&) = delete;
  CallCounters& operator=(const CallCounters&) = delete;

  void publish(std::uint64_t calls);   // this process's count
  // This process's call `mine.call`: its signature written to its ring, its count published, then (after a seq_cst
  // fence) the same call's signature of every other process that has already written it compared with it. The first
  // other process whose signature differs, if any. An entry another process overwrote (it is K calls ahead) or
  // overwrites while it is read is not compared. Allocates nothing.
  std::optional<CallMismatch> publish(const CallSignature& mine);
  std::uint64_t of(int process) const;  // any process's (this one's included)
  // Says in this process's page that its communicator failed (or was aborted) and why; only the first call counts.
  void publish_failure(ProcessFailure kind, std::string_view why);
  // The first other process whose page says its communicator failed or was aborted, if any.
  std::optional<SeenFailure> failure_of_another() const;
  int processes() const { return pages_.processes(); }
  int process() const { return process_; }

 private:
  CallCounters() = default;
  int process_ = 0;
  SharedMemfds pages_;  // a page per process, mapped (this process's writable)
};

// Since when each other process has been behind this one without making a call (from the later of its last call
// and the check that first saw it behind); pure, so it is tested on any CPU.
class StallWatch {
 public:
  explicit StallWatch(std::chrono::milliseconds limit) : limit_(limit) {}
  // `theirs[p]`: process p's calls (this process's own entry ignored through `self`). The first process behind
  // `mine` whose count has not moved for the limit since it fell behind, else -1.
  int check(std::chrono::steady_clock::time_point now, int self, std::uint64_t mine,
            std::span<const std::uint64_t> theirs);
  // How long process p's count has stood still (as of the last check).
  std::chrono::milliseconds still_for(int p, std::chrono::steady_clock::time_point now) const;

 private:
  std::chrono::milliseconds limit_;
  std::vector<std::uint64_t> last_;
  std::vector<std::chrono::steady_clock::time_point> since_;
  std::vector<bool> behind_;  // as of the last check
};

}  // namespace canopy
