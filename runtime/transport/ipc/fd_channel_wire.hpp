// The FdChannel's wire and the unix-socket calls under it: a message is a fixed header (FdWireHeader), the payload,
// then the descriptors in SCM_RIGHTS messages of at most kFdsPerMessage each, one byte apiece; the receiver answers
// one byte once it holds every descriptor. Endpoints live in Linux's abstract namespace (no file). Every call here is
// bounded by the socket timeouts set_deadline sets. Used by fd_channel.cpp, and by tests that play a process which is
// not one of the job's (an impostor speaking the real wire).
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/transport/ipc/fd_channel.hpp"

namespace canopy {

constexpr std::uint32_t kFdWireMagic = 0x64666e63;  // "cnfd"
constexpr std::uint16_t kFdWireVersion = 1;
constexpr std::uint32_t kFdWireMaxFds = 1 << 16;        // descriptors in one message
constexpr std::uint32_t kFdWireMaxPayload = 16 << 20;   // payload bytes in one message
constexpr std::size_t kFdsPerMessage = 200;             // under the kernel's SCM_MAX_FD (253)

struct FdWireHeader {
  std::uint32_t magic = kFdWireMagic;
  std::uint16_t version = kFdWireVersion;
  std::uint16_t reserved = 0;
  std::int32_t from = 0;  // the sending rank, as it claims: checked against its credentials
  std::uint32_t tag = 0;
  std::uint32_t fds = 0;
  std::uint32_t payload = 0;
};
static_assert(sizeof(FdWireHeader) == 24);

// Milliseconds left until `deadline`, 0 once past (a poll's timeout).
int remaining_ms(std::chrono::steady_clock::time_point deadline);

// Whether `h` is a header this version reads (magic, version, bounds).
bool well_formed(const FdWireHeader& h);

// The address of abstract name `name` (without its leading NUL) and its length.
sockaddr_un abstract_address(const std::string& name, socklen_t* length);

// Bounds every blocking read or write on `fd` by the time left before `deadline` (at least 1 ms).
void set_deadline(int fd, std::chrono::steady_clock::time_point deadline);

// The credentials of the process at the other end of connected unix socket `fd` (SO_PEERCRED: for an accepted
// socket, the process that connected; for a connected one, the process that called listen()), in this process's pid
// and user namespaces (pid 0 where the peer's pid namespace is not visible from ours). False where the call fails.
bool peer_credentials(int fd, PeerCredentials* out);

bool write_all(int fd, const void* data, std::size_t bytes);
bool read_all(int fd, void* data, std::size_t bytes);
// `fds` in SCM_RIGHTS messages of at most kFdsPerMessage, one byte each.
bool send_fds(int socket, std::span<const int> fds);
// `count` descriptors into `out`, each owned at once, so none leaks on a failure.
bool receive_fds(int socket, std::size_t count, std::vector<UniqueFd>* out);

}  // namespace canopy
