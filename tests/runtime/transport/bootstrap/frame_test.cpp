// The bootstrap's frames and messages: every message round-trips, and every malformed frame or body is refused with
// a message naming what is wrong, without reading out of bounds (random inputs here; tests/fuzz for more).
#include <gmock/gmock.h>

#include "runtime/transport/bootstrap/frame.hpp"
#include "runtime/transport/bootstrap/wire_bytes.hpp"
#include "tests/runtime/transport/bootstrap/bootstrap_test_util.hpp"

namespace canopy::testing {
namespace {

using ::testing::HasSubstr;

Hello sample_hello() {
  Hello h;
  h.version = "0.1.0";
  h.nranks = 4;
  h.rank = 2;
  h.payload = std::string("host\0uuid", 9);
  return h;
}

// The body of a whole frame, checked to be of `type`.
std::string body_of(const std::string& frame, MessageType type) {
  Frame f;
  const Status s = decode_frame(frame, &f);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(f.type, type);
  return f.body;
}

TEST(BootstrapFrame, EveryMessageRoundTrips) {
  Hello hello;
  ASSERT_TRUE(decode_body(body_of(encode_frame(sample_hello()), MessageType::hello), &hello).ok());
  EXPECT_EQ(hello.version, "0.1.0");
  EXPECT_EQ(hello.nranks, 4u);
  EXPECT_EQ(hello.rank, 2u);
  EXPECT_EQ(hello.payload, sample_hello().payload);

  Welcome welcome;
  ASSERT_TRUE(decode_body(body_of(encode_frame(Welcome{{"a", "", "ccc"}}), MessageType::welcome), &welcome).ok());
  EXPECT_EQ(welcome.payloads, (std::vector<std::string>{"a", "", "ccc"}));

  Allgather part;
  ASSERT_TRUE(decode_body(body_of(encode_frame(Allgather{7, "mine"}), MessageType::allgather), &part).ok());
  EXPECT_EQ(part.round, 7u);
  EXPECT_EQ(part.payload, "mine");

  AllgatherResult result;
  ASSERT_TRUE(
      decode_body(body_of(encode_frame(AllgatherResult{3, {"x", "y"}}), MessageType::allgather_result), &result)
          .ok());
  EXPECT_EQ(result.round, 3u);
  EXPECT_EQ(result.payloads, (std::vector<std::string>{"x", "y"}));

  ErrorMessage error;
  ASSERT_TRUE(decode_body(body_of(encode_frame(ErrorMessage{"why"}), MessageType::error), &error).ok());
  EXPECT_EQ(error.text, "why");

  Auth auth;
  for (int i = 0; i < 16; ++i) auth.secret[i] = static_cast<unsigned char>(i * 7);
  const std::string auth_frame = encode_frame(auth);
  EXPECT_EQ(auth_frame.size(), kAuthFrameBytes);
  EXPECT_EQ(body_of(auth_frame, MessageType::auth).size(), kAuthBodyBytes);
  Auth decoded;
  ASSERT_TRUE(decode_auth_frame(auth_frame, &decoded).ok());
  EXPECT_EQ(decoded.secret, auth.secret);
}

// The root reads a connection's first kAuthFrameBytes and nothing more before it has checked the secret: every header
// that is not an AUTH's exactly is refused from its 12 bytes, naming what is wrong.
TEST(BootstrapFrame, OnlyAFixedSizeAuthOpensAConnection) {
  const auto auth_error = [](const std::string& header) {
    const Status s = check_auth_header(header);
    EXPECT_FALSE(s.ok()) << header.size();
    return s.message();
  };
  EXPECT_TRUE(check_auth_header(raw_frame(kFrameMagic, kProtocolVersion, 6, 16)).ok());
  EXPECT_THAT(auth_error(raw_frame(kFrameMagic, kProtocolVersion, 6, 1u << 30)),
              HasSubstr("AUTH: a body of 1073741824 bytes, but an AUTH's is 16"));
  EXPECT_THAT(auth_error(raw_frame(kFrameMagic, kProtocolVersion, 6, 15)), HasSubstr("a body of 15 bytes"));
  EXPECT_THAT(auth_error(raw_frame(kFrameMagic, kProtocolVersion, 1, kMaxHelloBody)),
              HasSubstr("a HELLO where a connection's first message must be an AUTH (the secret)"));
  EXPECT_THAT(auth_error(raw_frame(kFrameMagic, kProtocolVersion, 3, 4)), HasSubstr("a ALLGATHER where"));
  EXPECT_THAT(auth_error(raw_frame(kFrameMagic, 1, 1, 60)),
              HasSubstr("protocol version 1, but this Canopy speaks version 2: run one Canopy version"));
  EXPECT_THAT(auth_error("GET / HTTP/1.1\r\n"), HasSubstr("not a Canopy bootstrap message"));
  EXPECT_THAT(auth_error("cnpb"), HasSubstr("4 bytes, but a header is 12"));

  EXPECT_TRUE(is_other_protocol_version(raw_frame(kFrameMagic, 1, 1, 60)));
  EXPECT_TRUE(is_other_protocol_version(raw_frame(kFrameMagic, 3, 6, 16)));
  EXPECT_FALSE(is_other_protocol_version(raw_frame(kFrameMagic, kProtocolVersion, 1, 60)));
  EXPECT_FALSE(is_other_protocol_version(raw_frame(kFrameMagic + 1, 1, 1, 60)));
  EXPECT_FALSE(is_other_protocol_version("cnp"));

  Auth auth;
  const std::string whole = encode_frame(Auth{});
  EXPECT_THAT(decode_auth_frame(whole.substr(0, 27), &auth).message(), HasSubstr("27 bytes, but an AUTH is 28"));
  EXPECT_THAT(decode_auth_frame(whole + "x", &auth).message(), HasSubstr("29 bytes, but an AUTH is 28"));
  EXPECT_THAT(decode_auth_frame(raw_frame(kFrameMagic, kProtocolVersion, 1, 16, std::string(16, 's')), &auth).message(),
              HasSubstr("a HELLO where"));
}

std::string header_error(const std::string& bytes, std::uint32_t max_body = kMaxFrameBody) {
  FrameHeader h;
  const Status s = decode_frame_header(bytes, max_body, &h);
  EXPECT_FALSE(s.ok());
  return s.message();
}

TEST(BootstrapFrame, BadHeadersAreRefusedSayingWhy) {
  EXPECT_THAT(header_error("GET / HTTP/1.1\r\n"), HasSubstr("not a Canopy bootstrap message"));
  EXPECT_THAT(header_error(raw_frame(kFrameMagic, 9, 1, 0)), HasSubstr("protocol version 9, but this Canopy speaks "
                                                                    "version 2"));
  EXPECT_THAT(header_error(raw_frame(kFrameMagic, 1, 1, 0)), HasSubstr("protocol version 1, but this Canopy speaks "
                                                                    "version 2"));
  EXPECT_THAT(header_error(raw_frame(kFrameMagic, 2, 0, 0)), HasSubstr("unknown message type 0"));
  EXPECT_THAT(header_error(raw_frame(kFrameMagic, 2, 7, 0)), HasSubstr("unknown message type 7"));
  EXPECT_THAT(header_error(raw_frame(kFrameMagic, 2, 1, kMaxFrameBody + 1)),
              HasSubstr("HELLO: a body of 67108865 bytes, over the limit of 67108864"));
  EXPECT_THAT(header_error(raw_frame(kFrameMagic, 2, 1, 2000), 1000), HasSubstr("over the limit of 1000"));
  EXPECT_THAT(header_error("cnpb"), HasSubstr("4 bytes, but a header is 12"));
  Frame f;
  EXPECT_THAT(decode_frame(raw_frame(kFrameMagic, 2, 5, 10) + "abc", &f).message(),
              HasSubstr("the header says 10 body bytes, but 3 follow"));
}

std::string body_error(std::string_view body, auto* message) {
  const Status s = decode_body(body, message);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::remote_error);
  return s.message();
}

TEST(BootstrapFrame, BadBodiesAreRefusedNamingTheField) {
  const std::string hello = body_of(encode_frame(sample_hello()), MessageType::hello);
  Hello h;
  EXPECT_THAT(body_error(hello.substr(0, 2), &h), HasSubstr("ends inside the version's length"));
  EXPECT_THAT(body_error(hello.substr(0, 6), &h), HasSubstr("the version claims 5 bytes, but 2 follow"));
  EXPECT_THAT(body_error(hello.substr(0, 11), &h), HasSubstr("ends inside the nranks"));
  EXPECT_THAT(body_error(hello.substr(0, 15), &h), HasSubstr("ends inside the rank"));
  EXPECT_THAT(body_error(hello + "x", &h), HasSubstr("1 bytes follow its last field"));
  WireWriter long_version;
  long_version.text(std::string(300, 'v'));
  EXPECT_THAT(body_error(long_version.bytes(), &h), HasSubstr("the version is 300 bytes, over the limit of 256"));

  WireWriter too_many;  // counts that do not add up
  too_many.u32(1000);
  too_many.text("a");
  Welcome w;
  EXPECT_THAT(body_error(too_many.bytes(), &w), HasSubstr("claims 1000 payloads, but the 5 bytes left hold at most 1"));
  WireWriter short_list;
  short_list.u32(2);
  short_list.text("a");
  short_list.u32(9);
  EXPECT_THAT(body_error(short_list.bytes(), &w), HasSubstr("payload 1 claims 9 bytes, but 0 follow"));
  AllgatherResult r;
  EXPECT_THAT(body_error("", &r), HasSubstr("ALLGATHER_RESULT: the body ends inside the round"));
  ErrorMessage e;
  EXPECT_THAT(body_error("\x05", &e), HasSubstr("ERROR: the body ends inside the text's length"));
}

// Every prefix of every message, and random bytes: refused or taken, never a crash (ASan builds check the bounds).
TEST(BootstrapFrame, PrefixesAndRandomBytesNeverCrash) {
  const std::string frames[] = {encode_frame(Auth{}), encode_frame(sample_hello()), encode_frame(Welcome{{"a", "bb"}}),
                                encode_frame(Allgather{1, "p"}), encode_frame(AllgatherResult{1, {"p", "q"}}),
                                encode_frame(ErrorMessage{"e"})};
  const auto decode_all = [](std::string_view bytes) {
    Frame f;
    (void)decode_frame(bytes, &f);
    Auth auth;
    (void)check_auth_header(bytes), (void)is_other_protocol_version(bytes), (void)decode_auth_frame(bytes, &auth);
    Hello h;
    Welcome w;
    Allgather a;
    AllgatherResult r;
    ErrorMessage e;
    (void)decode_body(bytes, &h), (void)decode_body(bytes, &w), (void)decode_body(bytes, &a);
    (void)decode_body(bytes, &r), (void)decode_body(bytes, &e);
  };
  for (const std::string& frame : frames)
    for (std::size_t n = 0; n < frame.size(); ++n) {
      Frame f;
      EXPECT_FALSE(decode_frame(std::string_view(frame).substr(0, n), &f).ok()) << n;
      decode_all(std::string_view(frame).substr(kFrameHeaderBytes <= n ? kFrameHeaderBytes : 0, n));
    }
  std::mt19937_64 rng = seeded_rng("bootstrap frames");
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? 0 : rng());
    decode_all(bytes);
  }
}

}  // namespace
}  // namespace canopy::testing
