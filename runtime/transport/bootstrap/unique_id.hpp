// UniqueId: the 128 bytes (the size of NCCL's ncclUniqueId) that name one bootstrap: a magic and format version,
// the root's address and port, and a random 128-bit secret every HELLO must carry. One process makes it
// (make_unique_id, which starts the root there, as ncclGetUniqueId does) and hands it to every rank, e.g. as the
// 256 hex digits of to_string in an environment variable.
//
// Format 1, little-endian: magic "cnpy" (4 bytes), format version u16, address family u8 (4 or 6), 0 (u8), port
// u16, IPv6 scope id u32, address (16 bytes, IPv4 in the first 4), secret (16 bytes), then zeros to byte 128.
#pragma once

#include <array>
#include <chrono>
#include <string>
#include <string_view>

#include "core/status.hpp"
#include "runtime/transport/bootstrap/bootstrap_options.hpp"
#include "runtime/transport/bootstrap/socket_address.hpp"

namespace canopy {

struct UniqueId {
  std::array<unsigned char, 128> bytes{};
};
static_assert(sizeof(UniqueId) == 128, "a UniqueId must fit ncclUniqueId");

using BootstrapSecret = std::array<unsigned char, 16>;

// What a UniqueId holds.
struct UniqueIdContents {
  SocketAddress root;  // where the root listens
  BootstrapSecret secret{};
};

UniqueId encode_unique_id(const UniqueIdContents& contents);
// Checks the magic, format version, family, port and padding; the error says which is wrong.
Status decode_unique_id(const UniqueId& id, UniqueIdContents* out);

// 256 lowercase hex digits.
std::string to_string(const UniqueId& id);
// The inverse of to_string (surrounding whitespace ignored), checked as decode_unique_id does.
Status parse_unique_id(std::string_view text, UniqueId* out);

// 16 bytes from the OS (getrandom(2)).
Status random_secret(BootstrapSecret* out);

// Starts a bootstrap root in this process (a background thread) and writes the id that names it. The root listens
// on CANOPY_BOOTSTRAP_ADDR (ADDRESS or ADDRESS:PORT), else the first address of the interface CANOPY_SOCKET_IFNAME,
// else the first IPv4 address of an interface that is up and not loopback, else 127.0.0.1; on the port given there,
// else one the OS picks. It ends once the group has formed and every rank has left, or when the group fails or times
// out (options.timeout from its start, and again from the first rank's HELLO). Malformed variables and addresses it
// cannot listen on are invalid_argument errors naming the variable.
Status make_unique_id(UniqueId* out, const BootstrapOptions& options = {});

// Waits up to `wait` for the root that make_unique_id started for `id` in this process to end; true when it has (or
// there is none). For tests and orderly shutdown: a root ends by itself.
bool wait_for_bootstrap_root(const UniqueId& id, std::chrono::milliseconds wait);

// Stops the root that make_unique_id started for `id` in this process, if any: for an id whose every rank this
// process made into one communicator without the bootstrap (the NCCL API's grouped inits), so that no root waits out
// its timeout for ranks that will never come.
void retire_bootstrap_root(const UniqueId& id);

}  // namespace canopy
