// FdChannel: endpoints named by HMAC of the secret, both ends checked against the bootstrap's pids, messages kept for
// later receives bounded. The wire and the socket calls are fd_channel_wire's. Waits use poll and socket timeouts,
// each bounded by the channel's timeout.
#include "runtime/transport/ipc/fd_channel.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <future>
#include <thread>

#include "core/sha256.hpp"
#include "runtime/transport/ipc/fd_channel_wire.hpp"

namespace canopy {

namespace {

using Clock = std::chrono::steady_clock;

// Refusals logged one by one; after these, one line at each power of two (a flood of connections cannot fill the log).
constexpr std::uint64_t kRefusalsLoggedInFull = 16;

const char* const kPidNamespaceHint =
    "every process of a job on one host must share one pid namespace (SO_PEERCRED reports pid 0 for a process whose "
    "namespace is not visible from ours)";

}  // namespace

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

bool peer_allowed(const PeerCredentials& peer, uid_t self) { return peer.uid == self; }

bool peer_is(const PeerCredentials& peer, pid_t expected_pid, uid_t self) {
  return peer_allowed(peer, self) && expected_pid > 0 && peer.pid == expected_pid;
}

std::string fd_channel_name(const BootstrapSecret& secret, int rank) {
  const std::string_view key(reinterpret_cast<const char*>(secret.data()), secret.size());
  std::string label = "canopy fd channel v1";
  label += '\0';
  label += std::to_string(rank);
  return "canopy-" + hmac_sha256_hex(key, label).substr(0, 32);  // 128 bits; 40 bytes of sun_path's 107
}

Status FdChannel::listen(const BootstrapSecret& secret, int rank, std::vector<pid_t> expected_pids,
                         const Options& options, std::unique_ptr<FdChannel>* out) {
  if (rank < 0 || rank >= static_cast<int>(expected_pids.size()))
    return Status(StatusCode::invalid_argument,
                  fmt::format("rank {}: the descriptor channel was given the pids of {} ranks: give one per process "
                              "of the communicator",
                              rank, expected_pids.size()));
  if (expected_pids[rank] != ::getpid())
    return Status(StatusCode::invalid_argument,
                  fmt::format("rank {}: the bootstrap recorded pid {} for this rank, but this process is pid {}: {}",
                              rank, expected_pids[rank], ::getpid(), kPidNamespaceHint));
  std::unique_ptr<FdChannel> c(new FdChannel);
  c->secret_ = secret;
  c->rank_ = rank;
  c->expected_pids_ = std::move(expected_pids);
  c->options_ = options;
  c->listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t length = 0;
  const sockaddr_un address = abstract_address(fd_channel_name(secret, rank), &length);
  if (c->listener_ < 0 || ::bind(c->listener_, reinterpret_cast<const sockaddr*>(&address), length) != 0 ||
      ::listen(c->listener_, 64) != 0)
    return Status(StatusCode::invalid_argument,
                  fmt::format("rank {}: cannot listen for descriptors on its unix socket: {} (is another process "
                              "of this job already rank {} on this host, or another process given this job's "
                              "UniqueId?)",
                              rank, std::strerror(errno), rank));
  *out = std::move(c);
  return Status();
}

FdChannel::~FdChannel() {
  if (listener_ >= 0) ::close(listener_);
}

bool FdChannel::job_pid(pid_t pid) const {
  return pid > 0 && std::find(expected_pids_.begin(), expected_pids_.end(), pid) != expected_pids_.end();
}

void FdChannel::refuse(const std::string& why) {
  ++refused_;
  if (refused_ <= kRefusalsLoggedInFull)
    options_.log.warn(LogSubsys::init, why);
  else if ((refused_ & (refused_ - 1)) == 0)
    options_.log.warn(LogSubsys::init, fmt::format("{} ({} descriptor connections refused so far; only every power "
                                                   "of two is logged now)",
                                                   why, refused_));
}

Status FdChannel::send(int to, std::uint32_t tag, std::span<const int> fds, std::string_view payload) {
  if (fds.size() > kFdWireMaxFds || payload.size() > kFdWireMaxPayload)
    return Status(StatusCode::invalid_argument,
                  fmt::format("sending {} descriptors and {} bytes to rank {}: at most {} and {}", fds.size(),
                              payload.size(), to, kFdWireMaxFds, kFdWireMaxPayload));
  if (to < 0 || to >= static_cast<int>(expected_pids_.size()) || expected_pids_[to] <= 0)
    return Status(StatusCode::invalid_argument,
                  fmt::format("rank {}: rank {} has no process on this host among the channel's {} ranks: "
                              "descriptors cross only between processes of one host",
                              rank_, to, expected_pids_.size()));
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  socklen_t length = 0;
  const sockaddr_un address = abstract_address(fd_channel_name(secret_, to), &length);
  UniqueFd socket;
  for (;;) {
    socket = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), length) == 0) break;
    if ((errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN) || Clock::now() >= deadline)
      return Status(StatusCode::remote_error,
                    fmt::format("rank {}: rank {}'s descriptor endpoint did not answer within {} ms: {} (is it running "
                                "on this host, in the same job?)",
                                rank_, to, options_.timeout.count(), std::strerror(errno)));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the peer has not started listening yet
  }
  // Whoever listens on the name must be the process the bootstrap recorded for `to`: nothing crosses before that.
  PeerCredentials listener;
  if (!peer_credentials(socket.get(), &listener))
    return Status(StatusCode::remote_error,
                  fmt::format("rank {}: cannot read who holds rank {}'s descriptor endpoint (SO_PEERCRED: {}); "
                              "nothing was sent to it",
                              rank_, to, std::strerror(errno)));
  if (!peer_is(listener, expected_pids_[to], ::getuid()))
    return Status(StatusCode::remote_error,
                  fmt::format("rank {}: the descriptor endpoint of rank {} is held by pid {} (uid {}), not by pid {} "
                              "(uid {}) that the bootstrap recorded for it: another process holds the name (one given "
                              "this job's UniqueId, e.g. a stale process of an earlier run, or the processes run in "
                              "different pid namespaces: {}); nothing was sent to it",
                              rank_, to, listener.pid, listener.uid, expected_pids_[to], ::getuid(),
                              kPidNamespaceHint));
  set_deadline(socket.get(), deadline);
  FdWireHeader h;
  h.from = rank_;
  h.tag = tag;
  h.fds = static_cast<std::uint32_t>(fds.size());
  h.payload = static_cast<std::uint32_t>(payload.size());
  if (!write_all(socket.get(), &h, sizeof h) || !write_all(socket.get(), payload.data(), payload.size()) ||
      !send_fds(socket.get(), fds))
    return Status(StatusCode::remote_error, fmt::format("rank {}: sending {} descriptors to rank {} failed: {}", rank_,
                                                        fds.size(), to, std::strerror(errno)));
  char ack = 0;  // the receiver has taken every descriptor before we close
  if (!read_all(socket.get(), &ack, 1))
    return Status(StatusCode::remote_error,
                  fmt::format("rank {}: rank {} did not confirm the {} descriptors sent to it (it refused them, or "
                              "failed)",
                              rank_, to, fds.size()));
  return Status();
}

Status FdChannel::accept_one(Clock::time_point deadline, int from, std::uint32_t tag, FdMessage* wanted, bool* got) {
  *got = false;
  pollfd p{listener_, POLLIN, 0};
  const int ready = ::poll(&p, 1, remaining_ms(deadline));
  if (ready == 0 || (ready < 0 && errno == EINTR)) return Status();
  if (ready < 0)
    return Status(StatusCode::internal,
                  fmt::format("rank {}: waiting for descriptor connections: {}", rank_, std::strerror(errno)));
  UniqueFd socket(::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC));
  if (socket.get() < 0) {
    if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) return Status();
    return Status(StatusCode::internal, fmt::format("rank {}: accepting a descriptor connection: {} (too many open "
                                                    "files? raise `ulimit -n`)",
                                                    rank_, std::strerror(errno)));
  }
  // Who connected, before reading a byte: our user, and a process of this job on this host.
  PeerCredentials peer;
  if (!peer_credentials(socket.get(), &peer)) {
    refuse(fmt::format("rank {}: refused a descriptor connection whose credentials cannot be read (SO_PEERCRED: {})",
                       rank_, std::strerror(errno)));
    return Status();
  }
  if (!peer_allowed(peer, ::getuid())) {
    refuse(fmt::format("rank {}: refused a descriptor connection from pid {} (uid {}, not ours: {})", rank_, peer.pid,
                       peer.uid, ::getuid()));
    return Status();
  }
  if (!job_pid(peer.pid)) {
    refuse(fmt::format("rank {}: refused a descriptor connection from pid {}, which is no process of this job on this "
                       "host (the bootstrap recorded pids {}); nothing read from it{}",
                       rank_, peer.pid, fmt::join(expected_pids_, ", "),
                       peer.pid == 0 ? fmt::format(": {}", kPidNamespaceHint) : ""));
    return Status();
  }
  set_deadline(socket.get(), deadline);
  // The fixed header, then whether the rank it claims is the process that connected.
  FdWireHeader h;
  if (!read_all(socket.get(), &h, sizeof h) || !well_formed(h)) {
    refuse(fmt::format("rank {}: refused a malformed descriptor message from pid {}", rank_, peer.pid));
    return Status();
  }
  if (h.from < 0 || h.from >= static_cast<int>(expected_pids_.size()) || !peer_is(peer, expected_pids_[h.from],
                                                                                   ::getuid())) {
    const bool known = h.from >= 0 && h.from < static_cast<int>(expected_pids_.size());
    refuse(fmt::format("rank {}: refused a descriptor message from pid {} claiming to be rank {}, {}; nothing more "
                       "read from it",
                       rank_, peer.pid, h.from,
                       known ? fmt::format("whose process the bootstrap recorded as pid {}", expected_pids_[h.from])
                             : fmt::format("which is not one of the {} ranks", expected_pids_.size())));
    return Status();
  }
  const bool awaited = h.from == from && h.tag == tag;
  if (!awaited && (pending_.size() + 1 > kMaxPendingMessages || pending_payload_ + h.payload > kMaxPendingPayload ||
                   pending_fds_ + h.fds > kMaxPendingDescriptors))
    return Status(StatusCode::remote_error,
                  fmt::format("rank {}: rank {} sent a message (tag {}, {} bytes, {} descriptors) while this process "
                              "waits for rank {}'s (tag {}), and the channel already keeps {} messages ({} bytes, {} "
                              "descriptors) for later receives, the most it keeps being {} messages, {} bytes and {} "
                              "descriptors: the processes are out of step (one takes steps the others do not) or rank "
                              "{} sends without end; that message was refused",
                              rank_, h.from, h.tag, h.payload, h.fds, from, tag, pending_.size(), pending_payload_,
                              pending_fds_, kMaxPendingMessages, kMaxPendingPayload, kMaxPendingDescriptors, h.from));
  FdMessage m;
  m.payload.resize(h.payload);
  if (!read_all(socket.get(), m.payload.data(), m.payload.size()) || !receive_fds(socket.get(), h.fds, &m.fds)) {
    refuse(fmt::format("rank {}: refused a malformed descriptor message from pid {} (rank {})", rank_, peer.pid,
                       h.from));
    return Status();  // what arrived is closed with `m`
  }
  const char ack = 1;
  (void)write_all(socket.get(), &ack, 1);
  m.from = h.from;
  m.tag = h.tag;
  if (awaited) {
    *wanted = std::move(m);
    *got = true;
    return Status();
  }
  pending_payload_ += m.payload.size();
  pending_fds_ += m.fds.size();
  pending_.push_back(std::move(m));
  return Status();
}

Status FdChannel::receive(int from, std::uint32_t tag, FdMessage* out) {
  if (from < 0 || from >= static_cast<int>(expected_pids_.size()) || expected_pids_[from] <= 0)
    return Status(StatusCode::invalid_argument,
                  fmt::format("rank {}: rank {} has no process on this host among the channel's {} ranks: "
                              "descriptors cross only between processes of one host",
                              rank_, from, expected_pids_.size()));
  const auto it = std::find_if(pending_.begin(), pending_.end(),
                               [&](const FdMessage& m) { return m.from == from && m.tag == tag; });
  if (it != pending_.end()) {
    pending_payload_ -= it->payload.size();
    pending_fds_ -= it->fds.size();
    *out = std::move(*it);
    pending_.erase(it);
    return Status();
  }
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  while (Clock::now() < deadline) {
    bool got = false;
    if (Status s = accept_one(deadline, from, tag, out, &got); !s.ok()) return s;
    if (got) return Status();
  }
  return Status(StatusCode::remote_error, fmt::format("rank {}: no descriptors from rank {} (tag {}) within {} ms",
                                                      rank_, from, tag, options_.timeout.count()));
}

Status FdChannel::exchange(std::uint32_t tag, std::span<const int> fds, std::string_view payload,
                           std::span<const int> to, std::span<const int> from,
                           const std::function<Status(int from, FdMessage& message)>& on_message) {
  std::future<Status> sent = std::async(std::launch::async, [&] {
    for (int p : to)
      if (Status s = send(p, tag, fds, payload); !s.ok()) return s;
    return Status();
  });
  Status received;
  for (int p : from) {
    FdMessage m;
    if (received = receive(p, tag, &m); !received.ok()) break;
    if (received = on_message(p, m); !received.ok()) break;
  }
  const Status delivered = sent.get();
  return received.ok() ? delivered : received;
}

}  // namespace canopy
