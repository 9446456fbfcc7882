// FdChannel over unix-domain sockets in the abstract namespace: a header, the payload, then the descriptors in
// SCM_RIGHTS messages of at most kFdsPerMessage each. Waits use poll and socket timeouts, each bounded by the
// channel's timeout.
#include "runtime/transport/ipc/fd_channel.hpp"

#include <fmt/format.h>
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

namespace canopy {

namespace {

constexpr std::uint32_t kMagic = 0x64666e63;  // "cnfd"
constexpr std::uint16_t kVersion = 1;
constexpr std::uint32_t kMaxFds = 1 << 16;
constexpr std::uint32_t kMaxPayload = 16 << 20;
constexpr std::size_t kFdsPerMessage = 200;  // under the kernel's SCM_MAX_FD (253)

struct Header {
  std::uint32_t magic = kMagic;
  std::uint16_t version = kVersion;
  std::uint16_t reserved = 0;
  std::int32_t from = 0;
  std::uint32_t tag = 0;
  std::uint32_t fds = 0;
  std::uint32_t payload = 0;
};

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

// Bounds every blocking read or write on `fd` by the time left before `deadline`.
void set_deadline(int fd, Clock::time_point deadline) {
  const int ms = std::max(1, remaining_ms(deadline));
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

sockaddr_un abstract_address(const std::string& name, socklen_t* length) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path + 1, name.data(), std::min(name.size(), sizeof a.sun_path - 2));
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return a;
}

bool write_all(int fd, const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

// A one-byte message with room for `fds` descriptors in its control data, which SCM_RIGHTS rides on.
struct OneByteMessage {
  explicit OneByteMessage(std::size_t fds) : control(CMSG_SPACE(fds * sizeof(int))) {
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = control.data();
    m.msg_controllen = control.size();
  }
  OneByteMessage(const OneByteMessage&) = delete;
  OneByteMessage& operator=(const OneByteMessage&) = delete;
  char byte = 'f';
  iovec io{&byte, 1};
  std::vector<char> control;
  msghdr m{};
};

bool send_fds(int socket, std::span<const int> fds) {
  for (std::size_t at = 0; at < fds.size(); at += kFdsPerMessage) {
    const std::size_t count = std::min(kFdsPerMessage, fds.size() - at);
    OneByteMessage message(count);
    msghdr& m = message.m;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(count * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data() + at, count * sizeof(int));
    ssize_t n;
    do n = ::sendmsg(socket, &m, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n != 1) return false;
  }
  return true;
}

// Receives `count` descriptors into `out` (each owned at once, so none leaks on a failure).
bool receive_fds(int socket, std::size_t count, std::vector<UniqueFd>* out) {
  while (out->size() < count) {
    OneByteMessage message(kFdsPerMessage);
    msghdr& m = message.m;
    ssize_t n;
    do n = ::recvmsg(socket, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n != 1) return false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t k = 0; k < got; ++k) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof fd);
        out->emplace_back(fd);
      }
    }
    if (m.msg_flags & MSG_CTRUNC) return false;
  }
  return out->size() == count;
}

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

std::string fd_channel_name(const BootstrapSecret& secret, int rank) {
  Sha256 h;
  h.update(std::string_view(reinterpret_cast<const char*>(secret.data()), secret.size()));
  h.update(fmt::format("fd channel of rank {}", rank));
  return "canopy-" + h.hex_digest().substr(0, 32);
}

Status FdChannel::listen(const BootstrapSecret& secret, int rank, const Options& options,
                         std::unique_ptr<FdChannel>* out) {
  std::unique_ptr<FdChannel> c(new FdChannel);
  c->secret_ = secret;
  c->rank_ = rank;
  c->options_ = options;
  c->listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t length = 0;
  const sockaddr_un address = abstract_address(fd_channel_name(secret, rank), &length);
  if (c->listener_ < 0 || ::bind(c->listener_, reinterpret_cast<const sockaddr*>(&address), length) != 0 ||
      ::listen(c->listener_, 64) != 0)
    return Status(StatusCode::invalid_argument,
                  fmt::format("rank {}: cannot listen for descriptors on its unix socket: {} (is another process "
                              "of this job already rank {} on this host?)",
                              rank, std::strerror(errno), rank));
  *out = std::move(c);
  return Status();
}

FdChannel::~FdChannel() {
  if (listener_ >= 0) ::close(listener_);
}

Status FdChannel::send(int to, std::uint32_t tag, std::span<const int> fds, std::string_view payload) {
  if (fds.size() > kMaxFds || payload.size() > kMaxPayload)
    return Status(StatusCode::invalid_argument,
                  fmt::format("sending {} descriptors and {} bytes to rank {}: at most {} and {}", fds.size(),
                              payload.size(), to, kMaxFds, kMaxPayload));
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
  set_deadline(socket.get(), deadline);
  Header h;
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
                  fmt::format("rank {}: rank {} did not confirm the {} descriptors sent to it", rank_, to, fds.size()));
  return Status();
}

Status FdChannel::accept_one(Clock::time_point deadline) {
  pollfd p{listener_, POLLIN, 0};
  const int ready = ::poll(&p, 1, remaining_ms(deadline));
  if (ready == 0) return Status(StatusCode::remote_error, "timeout");
  if (ready < 0) return errno == EINTR ? Status() : Status(StatusCode::remote_error, std::strerror(errno));
  UniqueFd socket(::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC));
  if (socket.get() < 0) return Status();
  ucred cred{};
  socklen_t size = sizeof cred;
  if (::getsockopt(socket.get(), SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0 ||
      !peer_allowed({cred.pid, cred.uid}, ::getuid())) {
    options_.log.warn(LogSubsys::init, fmt::format("rank {}: refused a descriptor connection from pid {} (uid {}, not "
                                                   "ours: {})",
                                                   rank_, cred.pid, cred.uid, ::getuid()));
    return Status();
  }
  set_deadline(socket.get(), deadline);
  Header h;
  FdMessage m;
  const bool header_ok = read_all(socket.get(), &h, sizeof h) && h.magic == kMagic && h.version == kVersion &&
                         h.fds <= kMaxFds && h.payload <= kMaxPayload;
  m.payload.resize(header_ok ? h.payload : 0);
  if (!header_ok || !read_all(socket.get(), m.payload.data(), m.payload.size()) ||
      !receive_fds(socket.get(), h.fds, &m.fds)) {
    options_.log.warn(LogSubsys::init, fmt::format("rank {}: refused a malformed descriptor message from pid {}", rank_,
                                                   cred.pid));
    return Status();  // what arrived is closed with `m`
  }
  const char ack = 1;
  (void)write_all(socket.get(), &ack, 1);
  m.from = h.from;
  m.tag = h.tag;
  pending_.push_back(std::move(m));
  return Status();
}

Status FdChannel::receive(int from, std::uint32_t tag, FdMessage* out) {
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  for (;;) {
    const auto it = std::find_if(pending_.begin(), pending_.end(),
                                 [&](const FdMessage& m) { return m.from == from && m.tag == tag; });
    if (it != pending_.end()) {
      *out = std::move(*it);
      pending_.erase(it);
      return Status();
    }
    if (Status s = accept_one(deadline); !s.ok())
      return Status(StatusCode::remote_error,
                    fmt::format("rank {}: no descriptors from rank {} (tag {}) within {} ms{}", rank_, from, tag,
                                options_.timeout.count(), s.message() == "timeout" ? "" : ": " + s.message()));
  }
}

}  // namespace canopy

namespace canopy {

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
