// The bootstrap's frames and messages, encoded and checked (see frame.hpp).
#include "runtime/transport/bootstrap/frame.hpp"

#include <fmt/format.h>

#include <cstring>

#include "core/error.hpp"
#include "runtime/transport/bootstrap/wire_bytes.hpp"

namespace canopy {

std::string to_string(MessageType type) {
  switch (type) {
    case MessageType::hello: return "HELLO";
    case MessageType::welcome: return "WELCOME";
    case MessageType::allgather: return "ALLGATHER";
    case MessageType::allgather_result: return "ALLGATHER_RESULT";
    case MessageType::error: return "ERROR";
    case MessageType::auth: return "AUTH";
  }
  return fmt::format("type {}", static_cast<unsigned>(type));
}

namespace {
Status malformed(std::string_view what, const std::string& why) {
  return Status(StatusCode::remote_error, fmt::format("malformed bootstrap {}: {}", what, why));
}
Status malformed(MessageType type, const std::string& why) { return malformed(to_string(type), why); }

Status read_u32(WireReader& r, std::uint32_t* v, MessageType type, const char* field) {
  if (r.u32(v)) return {};
  return malformed(type, fmt::format("the body ends inside the {} (byte {}, {} left)", field, r.offset(), r.left()));
}

// A u32 length, then that many bytes: too long (over `max`) and cut short are told apart.
Status read_text(WireReader& r, std::string* v, std::size_t max, MessageType type, const std::string& field) {
  std::uint32_t n = 0;
  if (Status s = read_u32(r, &n, type, (field + "'s length").c_str()); !s.ok()) return s;
  if (n > max) return malformed(type, fmt::format("the {} is {} bytes, over the limit of {}", field, n, max));
  if (!r.raw(n, v))
    return malformed(type, fmt::format("the {} claims {} bytes, but {} follow", field, n, r.left()));
  return {};
}

// A u32 count, then that many length-prefixed strings.
Status read_list(WireReader& r, std::vector<std::string>* v, MessageType type) {
  std::uint32_t count = 0;
  if (Status s = read_u32(r, &count, type, "payload count"); !s.ok()) return s;
  if (count > r.left() / 4)
    return malformed(type, fmt::format("it claims {} payloads, but the {} bytes left hold at most {}", count,
                                       r.left(), r.left() / 4));
  v->assign(count, {});
  for (std::uint32_t i = 0; i < count; ++i)
    if (Status s = read_text(r, &(*v)[i], kMaxFrameBody, type, fmt::format("payload {}", i)); !s.ok()) return s;
  return {};
}

Status read_end(const WireReader& r, MessageType type) {
  if (r.left() == 0) return {};
  return malformed(type, fmt::format("{} bytes follow its last field (at byte {})", r.left(), r.offset()));
}

std::string frame_of(MessageType type, WireWriter& body) { return encode_frame(type, body.bytes()); }

void write_list(WireWriter& w, const std::vector<std::string>& items) {
  w.u32(static_cast<std::uint32_t>(items.size()));
  for (const std::string& item : items) w.text(item);
}
}  // namespace

Status decode_frame_header(std::string_view bytes, std::uint32_t max_body, FrameHeader* out) {
  WireReader r(bytes);
  std::uint32_t magic = 0, length = 0;
  std::uint16_t version = 0, type = 0;
  if (!r.u32(&magic) || !r.u16(&version) || !r.u16(&type) || !r.u32(&length))
    return malformed("frame", fmt::format("{} bytes, but a header is {}", bytes.size(), kFrameHeaderBytes));
  if (magic != kFrameMagic)
    return malformed("frame", fmt::format("magic {:#010x}, not a Canopy bootstrap message", magic));
  if (version != kProtocolVersion)
    return malformed("frame", fmt::format("protocol version {}, but this Canopy speaks version {}: run one Canopy "
                                          "version in every process",
                                          version, kProtocolVersion));
  if (type < 1 || type > 6) return malformed("frame", fmt::format("unknown message type {}", type));
  if (length > max_body)
    return malformed(static_cast<MessageType>(type),
                     fmt::format("a body of {} bytes, over the limit of {}", length, max_body));
  *out = {static_cast<MessageType>(type), length};
  return {};
}

Status decode_frame(std::string_view bytes, Frame* out) {
  FrameHeader header;
  if (Status s = decode_frame_header(bytes, kMaxFrameBody, &header); !s.ok()) return s;
  const std::size_t body = bytes.size() - kFrameHeaderBytes;
  if (body != header.body_bytes)
    return malformed(header.type, fmt::format("the header says {} body bytes, but {} follow", header.body_bytes, body));
  *out = {header.type, std::string(bytes.substr(kFrameHeaderBytes))};
  return {};
}

std::string encode_frame(MessageType type, std::string_view body) {
  CANOPY_INTERNAL_ASSERT(body.size() <= kMaxFrameBody, fmt::format("a {}-byte bootstrap message", body.size()));
  WireWriter w;
  w.u32(kFrameMagic);
  w.u16(kProtocolVersion);
  w.u16(static_cast<std::uint16_t>(type));
  w.u32(static_cast<std::uint32_t>(body.size()));
  w.raw(body);
  return std::move(w.bytes());
}

Status check_auth_header(std::string_view header) {
  FrameHeader h;
  if (Status s = decode_frame_header(header, UINT32_MAX, &h); !s.ok()) return s;
  if (h.type != MessageType::auth)
    return malformed("frame", fmt::format("a {} where a connection's first message must be an AUTH (the secret)",
                                          to_string(h.type)));
  if (h.body_bytes != kAuthBodyBytes)
    return malformed(MessageType::auth, fmt::format("a body of {} bytes, but an AUTH's is {}", h.body_bytes,
                                                    kAuthBodyBytes));
  return {};
}

bool is_other_protocol_version(std::string_view header) {
  WireReader r(header);
  std::uint32_t magic = 0;
  std::uint16_t version = 0;
  return r.u32(&magic) && r.u16(&version) && magic == kFrameMagic && version != kProtocolVersion;
}

Status decode_auth_frame(std::string_view frame, Auth* out) {
  if (frame.size() != kAuthFrameBytes)
    return malformed(MessageType::auth, fmt::format("{} bytes, but an AUTH is {}", frame.size(), kAuthFrameBytes));
  if (Status s = check_auth_header(frame.substr(0, kFrameHeaderBytes)); !s.ok()) return s;
  std::memcpy(out->secret.data(), frame.data() + kFrameHeaderBytes, kAuthBodyBytes);
  return {};
}

std::string encode_frame(const Auth& m) {
  return encode_frame(MessageType::auth, {reinterpret_cast<const char*>(m.secret.data()), m.secret.size()});
}

std::string encode_frame(const Hello& m) {
  WireWriter w;
  w.text(m.version);
  w.u32(m.nranks);
  w.u32(m.rank);
  w.text(m.payload);
  return frame_of(MessageType::hello, w);
}

std::string encode_frame(const Welcome& m) {
  WireWriter w;
  write_list(w, m.payloads);
  return frame_of(MessageType::welcome, w);
}

std::string encode_frame(const Allgather& m) {
  WireWriter w;
  w.u32(m.round);
  w.text(m.payload);
  return frame_of(MessageType::allgather, w);
}

std::string encode_frame(const AllgatherResult& m) {
  WireWriter w;
  w.u32(m.round);
  write_list(w, m.payloads);
  return frame_of(MessageType::allgather_result, w);
}

std::string encode_frame(const ErrorMessage& m) {
  WireWriter w;
  w.text(m.text);
  return frame_of(MessageType::error, w);
}

// The frame of every decode_body: `read_fields` reads the message's fields from the body, nothing may follow the
// last, and only a whole message reaches `out`.
template <class Message, class ReadFields>
Status decode_whole(std::string_view body, MessageType type, Message* out, ReadFields read_fields) {
  WireReader r(body);
  Message m;
  Status s = read_fields(r, m);
  if (s.ok()) s = read_end(r, type);
  if (s.ok()) *out = std::move(m);
  return s;
}

Status decode_body(std::string_view body, Hello* out) {
  constexpr MessageType t = MessageType::hello;
  return decode_whole(body, t, out, [&](WireReader& r, Hello& m) {
    Status s = read_text(r, &m.version, kMaxVersionBytes, t, "version");
    if (s.ok()) s = read_u32(r, &m.nranks, t, "nranks");
    if (s.ok()) s = read_u32(r, &m.rank, t, "rank");
    if (s.ok()) s = read_text(r, &m.payload, kMaxFrameBody, t, "payload");
    return s;
  });
}

Status decode_body(std::string_view body, Welcome* out) {
  return decode_whole(body, MessageType::welcome, out,
                      [](WireReader& r, Welcome& m) { return read_list(r, &m.payloads, MessageType::welcome); });
}

Status decode_body(std::string_view body, Allgather* out) {
  constexpr MessageType t = MessageType::allgather;
  return decode_whole(body, t, out, [](WireReader& r, Allgather& m) {
    Status s = read_u32(r, &m.round, t, "round");
    if (s.ok()) s = read_text(r, &m.payload, kMaxFrameBody, t, "payload");
    return s;
  });
}

Status decode_body(std::string_view body, AllgatherResult* out) {
  constexpr MessageType t = MessageType::allgather_result;
  return decode_whole(body, t, out, [](WireReader& r, AllgatherResult& m) {
    Status s = read_u32(r, &m.round, t, "round");
    if (s.ok()) s = read_list(r, &m.payloads, t);
    return s;
  });
}

Status decode_body(std::string_view body, ErrorMessage* out) {
  return decode_whole(body, MessageType::error, out, [](WireReader& r, ErrorMessage& m) {
    return read_text(r, &m.text, kMaxFrameBody, MessageType::error, "text");
  });
}

}  // namespace canopy
