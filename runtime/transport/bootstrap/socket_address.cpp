// SocketAddress text (see socket_address.hpp).
#include "runtime/transport/bootstrap/socket_address.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <net/if.h>

#include <charconv>

namespace canopy {

std::string host_text(const SocketAddress& address) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(address.family == 6 ? AF_INET6 : AF_INET, address.bytes.data(), text, sizeof text);
  if (address.family == 6 && address.scope_id != 0) return fmt::format("{}%{}", text, address.scope_id);
  return text;
}

std::string to_string(const SocketAddress& address) {
  if (address.family == 6) return fmt::format("[{}]:{}", host_text(address), address.port);
  return fmt::format("{}:{}", host_text(address), address.port);
}

namespace {
constexpr const char* kExpected =
    "expected an IPv4 or IPv6 address, optionally with :PORT, e.g. 10.0.0.1, 10.0.0.1:29500, ::1 or "
    "[fe80::1%eth0]:29500";

Status bad(std::string_view text, std::string_view why) {
  return Status(StatusCode::invalid_argument, fmt::format("'{}': {}; {}", text, why, kExpected));
}

// "fe80::1%eth0" -> scope index of eth0 (or a number); the host part is left in `host`.
bool split_scope(std::string_view* host, std::uint32_t* scope_id) {
  const std::size_t percent = host->find('%');
  if (percent == std::string_view::npos) return true;
  const std::string scope(host->substr(percent + 1));
  *host = host->substr(0, percent);
  const auto [end, ec] = std::from_chars(scope.data(), scope.data() + scope.size(), *scope_id);
  if (ec == std::errc() && end == scope.data() + scope.size()) return true;
  *scope_id = if_nametoindex(scope.c_str());
  return *scope_id != 0;
}
}  // namespace

Status parse_socket_address(std::string_view text, SocketAddress* out) {
  std::string_view host = text, port;
  bool has_port = false;
  if (!text.empty() && text.front() == '[') {  // [IPv6] or [IPv6]:PORT
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) return bad(text, "no ']' after '['");
    host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return bad(text, "junk after ']'");
    has_port = !rest.empty();
    if (has_port) port = rest.substr(1);
  } else if (text.find(':') == text.rfind(':') && text.find(':') != std::string_view::npos) {  // IPv4:PORT
    host = text.substr(0, text.find(':'));
    port = text.substr(text.find(':') + 1);
    has_port = true;
  }
  SocketAddress a;
  if (!split_scope(&host, &a.scope_id)) return bad(text, "unknown interface after '%'");
  const std::string host_string(host);
  if (inet_pton(AF_INET, host_string.c_str(), a.bytes.data()) == 1) {
    if (a.scope_id != 0) return bad(text, "an IPv4 address takes no %scope");
    a.family = 4;
  } else if (inet_pton(AF_INET6, host_string.c_str(), a.bytes.data()) == 1) {
    a.family = 6;
  } else {
    return bad(text, fmt::format("'{}' is not an IP address", host));
  }
  if (has_port) {
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), a.port);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size())
      return bad(text, "the port is not a number from 0 to 65535");
  }
  *out = a;
  return {};
}

SocketAddress ipv4_loopback() {
  SocketAddress a;
  a.bytes[0] = 127;
  a.bytes[3] = 1;
  return a;
}

}  // namespace canopy
