// Where make_unique_id's root listens: CANOPY_BOOTSTRAP_ADDR (ADDRESS or ADDRESS:PORT), else the first address of the
// interface CANOPY_SOCKET_IFNAME, else the first IPv4 address of an interface that is up and not loopback
// (getifaddrs), else 127.0.0.1; port 0 (the OS picks) unless CANOPY_BOOTSTRAP_ADDR names one.
#pragma once

#include <string>

#include "runtime/transport/bootstrap/socket_address.hpp"

namespace canopy {

struct ListenChoice {
  SocketAddress address;
  std::string why;  // "CANOPY_BOOTSTRAP_ADDR", "interface eth0 (CANOPY_SOCKET_IFNAME)", ... for the log
};

// Throws canopy::Error naming the variable when CANOPY_BOOTSTRAP_ADDR is malformed or CANOPY_SOCKET_IFNAME names no
// interface with an address.
ListenChoice bootstrap_listen_address();

}  // namespace canopy
