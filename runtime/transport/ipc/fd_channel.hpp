// FdChannel: how the processes of one host hand each other file descriptors (the POSIX handles of GPU memory that
// ShareableMemory exports) with a little data beside them. Each rank listens on a unix-domain socket in Linux's
// abstract namespace (nothing on the file system) whose name is derived from the job's 128-bit bootstrap secret and
// the rank, so only a process that holds the UniqueId can find it; every connection's peer must run as our user
// (SO_PEERCRED), else it is refused with a warning and the channel goes on. Descriptors cross in SCM_RIGHTS messages.
// Every wait is bounded by the timeout; errors are Status values naming the peer rank.
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
// Whether a peer may hand us descriptors: it runs as our user.
bool peer_allowed(const PeerCredentials& peer, uid_t self);

// The abstract-namespace name of `rank`'s endpoint in the job of `secret` (without the leading NUL).
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
  // Listens as `rank` of the job of `secret`.
  static Status listen(const BootstrapSecret& secret, int rank, const Options& options, std::unique_ptr<FdChannel>* out);
  ~FdChannel();
  FdChannel(const FdChannel&) = delete;
  FdChannel& operator=(const FdChannel&) = delete;

  // Sends `fds` (duplicated by the kernel into the receiver; ours stay open) and `payload` to rank `to`, tagged `tag`,
  // connecting until the timeout (the peer may not listen yet).
  Status send(int to, std::uint32_t tag, std::span<const int> fds, std::string_view payload);
  // The next message from rank `from` with tag `tag`, waiting until the timeout; messages from others are kept for
  // later calls.
  Status receive(int from, std::uint32_t tag, FdMessage* out);
  // One step every process takes together: sends `fds` and `payload` to each rank of `to` while receiving the message
  // tagged `tag` of each rank of `from` in turn and handing it to `on_message` (whose failure stops the receiving).
  // Sends wait for their receivers' acknowledgements, so they run on a thread of their own. The receiving's failure,
  // else the sending's.
  Status exchange(std::uint32_t tag, std::span<const int> fds, std::string_view payload, std::span<const int> to,
                  std::span<const int> from, const std::function<Status(int from, FdMessage& message)>& on_message);

 private:
  FdChannel() = default;
  Status accept_one(std::chrono::steady_clock::time_point deadline);  // one connection's message into pending_
  BootstrapSecret secret_{};
  int rank_ = 0;
  Options options_;
  int listener_ = -1;
  std::deque<FdMessage> pending_;
};

}  // namespace canopy
