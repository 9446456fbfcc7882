// The bootstrap's wire format, pure (no sockets; fuzzed by tests/fuzz/bootstrap_frame_fuzz.cpp). Every message is a
// frame: a 12-byte header {magic u32 "cnpb", protocol version u16, type u16, body length u32}, little-endian, then the
// body. Strings and payloads are a u32 length then the bytes; lists a u32 count then their strings.
//   HELLO             rank -> root   secret (16 bytes), Canopy version, nranks u32, rank u32, payload
//   WELCOME           root -> rank   every rank's HELLO payload, in rank order
//   ALLGATHER         rank -> root   round u32, payload
//   ALLGATHER_RESULT  root -> rank   round u32, every rank's payload of that round, in rank order
//   ERROR             root -> rank   text: why the group failed
// decode_* never read past their input and return an error naming the message and what is wrong in it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy {

constexpr std::uint32_t kFrameMagic = 0x62706e63;  // "cnpb" in little-endian bytes
constexpr std::uint16_t kProtocolVersion = 1;
constexpr std::size_t kFrameHeaderBytes = 12;
constexpr std::uint32_t kMaxFrameBody = std::uint32_t{64} << 20;  // no message is longer
constexpr std::uint32_t kMaxHelloBody = std::uint32_t{1} << 20;   // read before the secret is checked
constexpr std::size_t kMaxVersionBytes = 256;

enum class MessageType : std::uint16_t { hello = 1, welcome = 2, allgather = 3, allgather_result = 4, error = 5 };
std::string to_string(MessageType type);  // "HELLO", ...

struct FrameHeader {
  MessageType type = MessageType::error;
  std::uint32_t body_bytes = 0;
};

struct Frame {
  MessageType type = MessageType::error;
  std::string body;
};

// The first kFrameHeaderBytes of `bytes` as a header: the magic and version match, the type is known, the body is at
// most `max_body` bytes.
Status decode_frame_header(std::string_view bytes, std::uint32_t max_body, FrameHeader* out);
// One whole frame: a header, then exactly its body.
Status decode_frame(std::string_view bytes, Frame* out);
std::string encode_frame(MessageType type, std::string_view body);

struct Hello {
  BootstrapSecret secret{};
  std::string version;
  std::uint32_t nranks = 0;
  std::uint32_t rank = 0;
  std::string payload;
};
struct Welcome {
  std::vector<std::string> payloads;
};
struct Allgather {
  std::uint32_t round = 0;
  std::string payload;
};
struct AllgatherResult {
  std::uint32_t round = 0;
  std::vector<std::string> payloads;
};
struct ErrorMessage {
  std::string text;
};

// Whole frames (header and body).
std::string encode_frame(const Hello& m);
std::string encode_frame(const Welcome& m);
std::string encode_frame(const Allgather& m);
std::string encode_frame(const AllgatherResult& m);
std::string encode_frame(const ErrorMessage& m);

// Bodies (what follows the header), each checked to its last byte.
Status decode_body(std::string_view body, Hello* out);
Status decode_body(std::string_view body, Welcome* out);
Status decode_body(std::string_view body, Allgather* out);
Status decode_body(std::string_view body, AllgatherResult* out);
Status decode_body(std::string_view body, ErrorMessage* out);

}  // namespace canopy
