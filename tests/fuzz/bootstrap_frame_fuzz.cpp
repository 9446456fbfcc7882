// libFuzzer target for the bootstrap's wire format (runtime/transport/bootstrap/frame.hpp, unique_id.hpp): the
// bytes a root or rank reads from the network. Any input must be accepted or refused with a Status, never crash,
// hang or trip a sanitizer; an accepted frame (an AUTH too) must re-encode to exactly the bytes it came from. The
// root's server itself, over sockets, is bootstrap_root_fuzz's.
#include <algorithm>
#include <cstdint>
#include <string_view>

#include "runtime/transport/bootstrap/frame.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace {
using namespace canopy;

// Decodes `body` as a `Message`; when that succeeds, its frame must be `frame` byte for byte.
template <class Message>
void check_body(std::string_view body, std::string_view frame) {
  Message m;
  if (decode_body(body, &m).ok() && !frame.empty() && encode_frame(m) != frame) __builtin_trap();
}

void check_every_body(std::string_view body, std::string_view frame) {
  check_body<Hello>(body, frame);
  check_body<Welcome>(body, frame);
  check_body<Allgather>(body, frame);
  check_body<AllgatherResult>(body, frame);
  check_body<ErrorMessage>(body, frame);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Frame frame;
  if (decode_frame(bytes, &frame).ok()) {
    if (encode_frame(frame.type, frame.body) != bytes) __builtin_trap();
    check_every_body(frame.body, "");
    switch (frame.type) {  // the message the header names must round-trip to the whole input
      case MessageType::hello: check_body<Hello>(frame.body, bytes); break;
      case MessageType::welcome: check_body<Welcome>(frame.body, bytes); break;
      case MessageType::allgather: check_body<Allgather>(frame.body, bytes); break;
      case MessageType::allgather_result: check_body<AllgatherResult>(frame.body, bytes); break;
      case MessageType::error: check_body<ErrorMessage>(frame.body, bytes); break;
      case MessageType::auth: break;  // below
    }
  }
  check_every_body(bytes, "");  // bodies straight from the input, too

  Auth auth;  // a connection's first message, as the root reads it
  const bool header_ok = check_auth_header(bytes.substr(0, std::min(bytes.size(), kFrameHeaderBytes))).ok();
  if (decode_auth_frame(bytes, &auth).ok() && (!header_ok || encode_frame(auth) != bytes)) __builtin_trap();
  if (header_ok && is_other_protocol_version(bytes)) __builtin_trap();

  UniqueId id;
  if (parse_unique_id(bytes, &id).ok() && !parse_unique_id(to_string(id), &id).ok()) __builtin_trap();
  if (size >= id.bytes.size()) {
    std::copy_n(data, id.bytes.size(), id.bytes.begin());
    UniqueIdContents contents;
    if (decode_unique_id(id, &contents).ok() && encode_unique_id(contents).bytes != id.bytes) __builtin_trap();
  }
  return 0;
}
