// The FdChannel's wire and unix-socket calls (see fd_channel_wire.hpp).
#include "runtime/transport/ipc/fd_channel_wire.hpp"

#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace canopy {

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

namespace {

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

}  // namespace

bool well_formed(const FdWireHeader& h) {
  return h.magic == kFdWireMagic && h.version == kFdWireVersion && h.fds <= kFdWireMaxFds &&
         h.payload <= kFdWireMaxPayload;
}

sockaddr_un abstract_address(const std::string& name, socklen_t* length) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::size_t n = std::min(name.size(), sizeof a.sun_path - 1);
  std::memcpy(a.sun_path + 1, name.data(), n);
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return a;
}

void set_deadline(int fd, std::chrono::steady_clock::time_point deadline) {
  const int ms = std::max(1, remaining_ms(deadline));
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool peer_credentials(int fd, PeerCredentials* out) {
  ucred cred{};
  socklen_t size = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0 || size != sizeof cred) return false;
  *out = PeerCredentials{cred.pid, cred.uid};
  return true;
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

}  // namespace canopy
