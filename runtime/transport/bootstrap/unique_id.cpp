// UniqueId bytes and text (see unique_id.hpp); make_unique_id lives in root_registry.cpp.
#include "runtime/transport/bootstrap/unique_id.hpp"

#include <fmt/format.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/transport/bootstrap/wire_bytes.hpp"

namespace canopy {

namespace {
constexpr std::uint32_t kUniqueIdMagic = 0x79706e63;  // "cnpy" in little-endian bytes
constexpr std::uint16_t kUniqueIdFormat = 1;
constexpr std::size_t kUsedBytes = 4 + 2 + 1 + 1 + 2 + 4 + 16 + 16;

Status bad_id(const std::string& why) {
  return Status(StatusCode::invalid_argument,
                fmt::format("bootstrap unique id: {}; pass the id make_unique_id wrote, unchanged", why));
}
}  // namespace

UniqueId encode_unique_id(const UniqueIdContents& contents) {
  WireWriter w;
  w.u32(kUniqueIdMagic);
  w.u16(kUniqueIdFormat);
  w.u8(static_cast<std::uint8_t>(contents.root.family));
  w.u8(0);
  w.u16(contents.root.port);
  w.u32(contents.root.scope_id);
  w.raw({reinterpret_cast<const char*>(contents.root.bytes.data()), contents.root.bytes.size()});
  w.raw({reinterpret_cast<const char*>(contents.secret.data()), contents.secret.size()});
  UniqueId id;
  std::memcpy(id.bytes.data(), w.bytes().data(), w.bytes().size());
  return id;
}

Status decode_unique_id(const UniqueId& id, UniqueIdContents* out) {
  WireReader r({reinterpret_cast<const char*>(id.bytes.data()), id.bytes.size()});
  std::uint32_t magic = 0, scope = 0;
  std::uint16_t format = 0, port = 0;
  std::uint8_t family = 0, zero = 0;
  std::string address, secret;
  r.u32(&magic), r.u16(&format), r.u8(&family), r.u8(&zero), r.u16(&port), r.u32(&scope);
  r.raw(16, &address), r.raw(16, &secret);  // 46 of 128 bytes: these reads cannot fail
  if (magic != kUniqueIdMagic) return bad_id(fmt::format("it does not start with 'cnpy' (magic {:#010x})", magic));
  if (format != kUniqueIdFormat)
    return bad_id(fmt::format("format version {}, but this Canopy reads version {}: run one Canopy version in every "
                              "process",
                              format, kUniqueIdFormat));
  if (family != 4 && family != 6) return bad_id(fmt::format("address family {} (expected 4 or 6)", family));
  if (zero != 0) return bad_id(fmt::format("byte 7 is {} (expected 0)", zero));
  if (port == 0) return bad_id("the root's port is 0");
  if (family == 4 && (scope != 0 || std::any_of(address.begin() + 4, address.end(), [](char c) { return c != 0; })))
    return bad_id("an IPv4 address with IPv6 bytes set");
  const auto tail = std::find_if(id.bytes.begin() + kUsedBytes, id.bytes.end(), [](unsigned char c) { return c; });
  if (tail != id.bytes.end())
    return bad_id(fmt::format("byte {} is not 0 (bytes {} to 127 are padding)", tail - id.bytes.begin(), kUsedBytes));
  UniqueIdContents c;
  c.root.family = family;
  c.root.port = port;
  c.root.scope_id = scope;
  std::memcpy(c.root.bytes.data(), address.data(), 16);
  std::memcpy(c.secret.data(), secret.data(), 16);
  *out = c;
  return {};
}

std::string to_string(const UniqueId& id) {
  std::string text;
  text.reserve(2 * id.bytes.size());
  for (unsigned char b : id.bytes) text += fmt::format("{:02x}", b);
  return text;
}

Status parse_unique_id(std::string_view text, UniqueId* out) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  UniqueId id;
  if (text.size() != 2 * id.bytes.size())
    return bad_id(fmt::format("{} characters, but an id is {} hex digits", text.size(), 2 * id.bytes.size()));
  const auto digit = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const int d = digit(text[i]);
    if (d < 0) return bad_id(fmt::format("character {} ('{}') is not a hex digit", i, text[i]));
    id.bytes[i / 2] = static_cast<unsigned char>(id.bytes[i / 2] << 4 | d);
  }
  UniqueIdContents contents;
  if (Status s = decode_unique_id(id, &contents); !s.ok()) return s;
  *out = id;
  return {};
}

Status random_secret(BootstrapSecret* out) {
  std::size_t filled = 0;
  while (filled < out->size()) {
    const ssize_t n = getrandom(out->data() + filled, out->size() - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Status(StatusCode::internal, fmt::format("getrandom(2) failed for the bootstrap secret: {}",
                                                      std::strerror(errno)));
    filled += static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace canopy
