// Choosing the bootstrap root's address from the environment and the host's interfaces (see root_address.hpp).
#include "runtime/transport/bootstrap/root_address.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace canopy {

namespace {
// The interfaces' addresses in getifaddrs' order.
struct InterfaceAddress {
  std::string interface;
  unsigned flags = 0;
  SocketAddress address;
};

std::vector<InterfaceAddress> interface_addresses() {
  std::vector<InterfaceAddress> found;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return found;
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
    InterfaceAddress a{i->ifa_name, i->ifa_flags, {}};
    if (i->ifa_addr->sa_family == AF_INET) {
      std::memcpy(a.address.bytes.data(), &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, 4);
    } else {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      a.address.family = 6;
      std::memcpy(a.address.bytes.data(), &v6->sin6_addr, 16);
      a.address.scope_id = v6->sin6_scope_id;
    }
    found.push_back(a);
  }
  freeifaddrs(list);
  return found;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}
}  // namespace

ListenChoice bootstrap_listen_address() {
  if (const char* text = env("CANOPY_BOOTSTRAP_ADDR")) {
    ListenChoice choice{{}, "CANOPY_BOOTSTRAP_ADDR"};
    if (Status s = parse_socket_address(text, &choice.address); !s.ok())
      throw Error("CANOPY_BOOTSTRAP_ADDR=" + s.message() + " (the address the bootstrap root listens on)");
    return choice;
  }
  const std::vector<InterfaceAddress> interfaces = interface_addresses();
  if (const char* name = env("CANOPY_SOCKET_IFNAME")) {
    std::set<std::string> names;
    for (const InterfaceAddress& i : interfaces) {
      if (i.interface == name) return {i.address, fmt::format("interface {} (CANOPY_SOCKET_IFNAME)", name)};
      names.insert(i.interface);
    }
    throw Error(fmt::format("CANOPY_SOCKET_IFNAME='{}': no interface of that name has an IP address; interfaces "
                            "with one: {}",
                            name, fmt::join(names, ", ")));
  }
  for (const InterfaceAddress& i : interfaces)
    if (i.address.family == 4 && (i.flags & IFF_UP) && !(i.flags & IFF_LOOPBACK))
      return {i.address, fmt::format("interface {}, the first that is up and not loopback", i.interface)};
  return {ipv4_loopback(), "loopback: no other interface is up"};
}

}  // namespace canopy
