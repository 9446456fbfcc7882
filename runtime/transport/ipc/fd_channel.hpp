// FdChannel: how the processes of one host hand each other file descriptors (the POSIX handles of GPU memory that
// ShareableMemory exports, memfds of shared host memory) with a little data beside them. Each rank (a process of the
// communicator) listens on a unix-domain socket in Linux's abstract namespace (nothing on the file system) named by
// an HMAC-SHA256 of the rank keyed by the job's 128-bit bootstrap secret: any local process can list the names
// (/proc/net/unix) and connect, but none can compute a rank's name without the secret. So every connection is checked
// on both ends against what the bootstrap recorded (SO_PEERCRED): the receiver takes a message only from a process
// of our user whose pid is the one recorded for the rank its header claims, and refuses anything else with a warning
// (rate-limited) and goes on; the sender, once connected and before sending anything, checks that the listener is
// the process recorded for the rank it means to reach, and fails naming both pids otherwise. Every process of a job
// on one host must therefore share one pid namespace. Descriptors cross in SCM_RIGHTS messages (fd_channel_wire.hpp).
// Messages kept for later receives are bounded (count, payload bytes, descriptors). Every wait is bounded by the
// timeout; errors are Status values naming the peer rank.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/logger.hpp"
#include "core/status.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy {

// A file descriptor owned: closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// Who is at the other end of a unix socket (SO_PEERCRED).
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
};
// Whether a peer may hand us descriptors as far as its user goes: it runs as our user.
bool peer_allowed(const PeerCredentials& peer, uid_t self);
// Whether a peer is the process the bootstrap recorded for a rank: our user, and the recorded pid (`expected_pid`; 0,
// a rank on no process of this host, and a peer pid of 0, one outside our pid namespace, never match).
bool peer_is(const PeerCredentials& peer, pid_t expected_pid, uid_t self);

// The abstract-namespace name of `rank`'s endpoint in the job of `secret` (without the leading NUL): "canopy-" and the
// first 32 hex digits of HMAC-SHA256 keyed by the secret over "canopy fd channel v1", a NUL and the rank in decimal.
std::string fd_channel_name(const BootstrapSecret& secret, int rank);

// What one message carried.
struct FdMessage {
  int from = -1;
  std::uint32_t tag = 0;
  std::vector<UniqueFd> fds;
  std::string payload;
};

class FdChannel {
 public:
  struct Options {
    std::chrono::milliseconds timeout{120000};
    Logger log;
  };
  // What the channel keeps for later receives at most (messages of other ranks or tags than the one awaited). In the
  // steps every process takes together, a message arrives early only from a process ahead of us by steps that need
  // nothing from us, one message each, and the join takes few such steps: a handful per process. 1024 messages leave
  // room for any host's processes while bounding what a runaway peer can make us hold, with 64 MiB of payload (four
  // messages of the largest) and 4096 descriptors.
  static constexpr std::size_t kMaxPendingMessages = 1024;
  static constexpr std::size_t kMaxPendingPayload = std::size_t{64} << 20;
  static constexpr std::size_t kMaxPendingDescriptors = 4096;
  // Listens as `rank` of the job of `secret`. `expected_pids`: per rank, the pid the bootstrap recorded for its
  // process where it runs on this host, else 0 (it never connects here, and no message is sent to it); this process's
  // own entry must be getpid(). Threads standing for processes in one process all give getpid().
  static Status listen(const BootstrapSecret& secret, int rank, std::vector<pid_t> expected_pids,
                       const Options& options, std::unique_ptr<FdChannel>* out);
  ~FdChannel();
  FdChannel(const FdChannel&) = delete;
  FdChannel& operator=(const FdChannel&) = delete;

  // Sends `fds` (duplicated by the kernel into the receiver; ours stay open) and `payload` to rank `to`, tagged `tag`,
  // connecting until the timeout (the peer may not listen yet). Nothing is sent unless the listener is the process
  // recorded for `to` (our user, its pid): else a remote_error naming both pids.
  Status send(int to, std::uint32_t tag, std::span<const int> fds, std::string_view payload);
  // The next message from rank `from` with tag `tag`, waiting until the timeout; messages from others are kept for
  // later calls, up to the bounds above (one more is refused, and this call fails naming it).
  Status receive(int from, std::uint32_t tag, FdMessage* out);
  // One step every process takes together: sends `fds` and `payload` to each rank of `to` while receiving the message
  // tagged `tag` of each rank of `from` in turn and handing it to `on_message` (whose failure stops the receiving).
  // Sends wait for their receivers' acknowledgements, so they run on a thread of their own. The receiving's failure,
  // else the sending's.
  Status exchange(std::uint32_t tag, std::span<const int> fds, std::string_view payload, std::span<const int> to,
                  std::span<const int> from, const std::function<Status(int from, FdMessage& message)>& on_message);

  std::size_t pending() const { return pending_.size(); }  // messages kept for later receives
  std::uint64_t refused() const { return refused_; }       // connections refused so far

 private:
  FdChannel() = default;
  // Takes one connection (or none before `deadline`): the awaited message (rank `from`, tag `tag`) into *wanted and
  // *got set, another into pending_, a refused one closed. Fails on the pending bound or a failed poll.
  Status accept_one(std::chrono::steady_clock::time_point deadline, int from, std::uint32_t tag, FdMessage* wanted,
                    bool* got);
  void refuse(const std::string& why);  // logs a refusal (the first ones, then at powers of two) and counts it
  bool job_pid(pid_t pid) const;        // whether `pid` is a process of this job on this host
  BootstrapSecret secret_{};
  int rank_ = 0;
  std::vector<pid_t> expected_pids_;
  Options options_;
  int listener_ = -1;
  std::deque<FdMessage> pending_;
  std::size_t pending_payload_ = 0;
  std::size_t pending_fds_ = 0;
  std::uint64_t refused_ = 0;
};

}  // namespace canopy
