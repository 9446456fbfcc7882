// The bootstrap's wire format, pure (no sockets; fuzzed by tests/fuzz/bootstrap_frame_fuzz.cpp). Every message is a
// frame: a 12-byte header {magic u32 "cnpb", protocol version u16, type u16, body length u32}, little-endian, then the
// body. Strings and payloads are a u32 length then the bytes; lists a u32 count then their strings.
//   AUTH              rank -> root   secret (16 bytes); always a connection's first message, exactly 28 bytes long
//   HELLO             rank -> root   Canopy version, nranks u32, rank u32, payload (right after the AUTH)
//   WELCOME           root -> rank   every rank's HELLO payload, in rank order
//   ALLGATHER         rank -> root   round u32, payload
//   ALLGATHER_RESULT  root -> rank   round u32, every rank's payload of that round, in rank order
//   ERROR             root -> rank   text: why the group failed (or, to a peer of another protocol version, why the
//                                    root drops it)
// Protocol version 2. Version 1 carried the secret inside the HELLO, so a root read up to 1 MiB from anyone before
// checking it; now the root reads the 28 bytes of the AUTH into a fixed buffer, checks them, and only then reads the
// HELLO. decode_* never read past their input and return an error naming the message and what is wrong in it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy {

constexpr std::uint32_t kFrameMagic = 0x62706e63;  // "cnpb" in little-endian bytes
constexpr std::uint16_t kProtocolVersion = 2;
constexpr std::size_t kFrameHeaderBytes = 12;
constexpr std::uint32_t kMaxFrameBody = std::uint32_t{64} << 20;  // no message is longer
constexpr std::uint32_t kMaxHelloBody = std::uint32_t{1} << 20;   // the first message after the AUTH
constexpr std::size_t kMaxVersionBytes = 256;
constexpr std::uint32_t kAuthBodyBytes = 16;                                 // the secret
constexpr std::size_t kAuthFrameBytes = kFrameHeaderBytes + kAuthBodyBytes;  // all a stranger's bytes the root reads
static_assert(sizeof(BootstrapSecret) == kAuthBodyBytes);

enum class MessageType : std::uint16_t {
  hello = 1,
  welcome = 2,
  allgather = 3,
  allgather_result = 4,
  error = 5,
  auth = 6,
};
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

// The first kFrameHeaderBytes of a connection's first message, checked to open an AUTH: the magic, this protocol
// version, the type AUTH and a body of exactly kAuthBodyBytes.
Status check_auth_header(std::string_view header);
// Whether a header has the magic but another protocol version (a Canopy of another release: the root tells it so).
bool is_other_protocol_version(std::string_view header);

struct Auth {
  BootstrapSecret secret{};
};
// The whole first message (kAuthFrameBytes, the header checked as check_auth_header does).
Status decode_auth_frame(std::string_view frame, Auth* out);

struct Hello {
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
std::string encode_frame(const Auth& m);
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
