// SocketAddress: an IPv4 or IPv6 address and a TCP port, as the UniqueId carries the bootstrap root's and as
// CANOPY_BOOTSTRAP_ADDR writes it ("10.0.0.1", "10.0.0.1:29500", "::1", "[fe80::1%eth0]:29500"). Plain data, no
// sockets: the asio conversions live in asio_endpoint.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.hpp"

namespace canopy {

struct SocketAddress {
  int family = 4;                          // 4 or 6
  std::array<unsigned char, 16> bytes{};   // network order; IPv4 uses the first 4
  std::uint32_t scope_id = 0;              // IPv6 link-local: the interface index; else 0
  std::uint16_t port = 0;                  // 0: any (the OS chooses when listening)

  bool operator==(const SocketAddress&) const = default;
};

// "10.0.0.1:29500", "[fe80::1%2]:29500" (":0" when the port is 0).
std::string to_string(const SocketAddress& address);
// The address alone: "10.0.0.1", "fe80::1%2".
std::string host_text(const SocketAddress& address);

// Reads "ADDRESS" or "ADDRESS:PORT" (IPv6 in brackets when a port follows; a scope as %IFNAME or %INDEX). The error
// says what was expected.
Status parse_socket_address(std::string_view text, SocketAddress* out);

SocketAddress ipv4_loopback();  // 127.0.0.1, port 0

}  // namespace canopy
