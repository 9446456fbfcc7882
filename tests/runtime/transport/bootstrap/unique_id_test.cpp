// The UniqueId's bytes and text, SocketAddress text, and the bootstrap's environment variables
// (CANOPY_BOOTSTRAP_ADDR, CANOPY_SOCKET_IFNAME, CANOPY_BOOTSTRAP_TIMEOUT_S).
#include <gmock/gmock.h>

#include "core/error.hpp"
#include "runtime/transport/bootstrap/root_address.hpp"
#include "tests/runtime/transport/bootstrap/bootstrap_test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;
using testing::ScopedEnv;

UniqueIdContents sample_contents() {
  UniqueIdContents c;
  EXPECT_TRUE(parse_socket_address("10.1.2.3:29500", &c.root).ok());
  for (int i = 0; i < 16; ++i) c.secret[i] = static_cast<unsigned char>(0xa0 + i);
  return c;
}

TEST(UniqueId, RoundTripsThroughBytesAndText) {
  const UniqueIdContents c = sample_contents();
  const UniqueId id = encode_unique_id(c);
  const std::string text = to_string(id);
  EXPECT_EQ(text.size(), 256u);
  EXPECT_EQ(text.substr(0, 8), "636e7079");  // "cnpy"
  UniqueId parsed;
  ASSERT_TRUE(parse_unique_id("  " + text + "\n", &parsed).ok());
  EXPECT_EQ(parsed.bytes, id.bytes);
  UniqueIdContents back;
  ASSERT_TRUE(decode_unique_id(parsed, &back).ok());
  EXPECT_EQ(back.root, c.root);
  EXPECT_EQ(back.secret, c.secret);
  EXPECT_EQ(to_string(back.root), "10.1.2.3:29500");
}

TEST(UniqueId, Ipv6AddressWithScopeRoundTrips) {
  UniqueIdContents c = sample_contents();
  ASSERT_TRUE(parse_socket_address("[fe80::1%7]:4000", &c.root).ok());
  UniqueIdContents back;
  ASSERT_TRUE(decode_unique_id(encode_unique_id(c), &back).ok());
  EXPECT_EQ(to_string(back.root), "[fe80::1%7]:4000");
}

// parse_unique_id's message for `text`, which it must refuse.
std::string parse_error(const std::string& text) {
  UniqueId id;
  const Status s = parse_unique_id(text, &id);
  EXPECT_FALSE(s.ok()) << text;
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  return s.message();
}

TEST(UniqueId, GarbageTextIsRefusedSayingWhatIsWrong) {
  const std::string good = to_string(encode_unique_id(sample_contents()));
  EXPECT_THAT(parse_error(""), HasSubstr("0 characters, but an id is 256 hex digits"));
  EXPECT_THAT(parse_error(good.substr(1)), HasSubstr("255 characters"));
  EXPECT_THAT(parse_error("x" + good.substr(1)), HasSubstr("character 0 ('x') is not a hex digit"));
  EXPECT_THAT(parse_error("00" + good.substr(2)), HasSubstr("does not start with 'cnpy'"));
  EXPECT_THAT(parse_error(good.substr(0, 8) + "0200" + good.substr(12)), HasSubstr("format version 2"));
  EXPECT_THAT(parse_error(good.substr(0, 12) + "05" + good.substr(14)), HasSubstr("address family 5"));
  EXPECT_THAT(parse_error(good.substr(0, 16) + "0000" + good.substr(20)), HasSubstr("the root's port is 0"));
  EXPECT_THAT(parse_error(good.substr(0, 254) + "01"), HasSubstr("byte 127 is not 0"));
  EXPECT_THAT(parse_error(good.substr(0, 254) + "01"), HasSubstr("pass the id make_unique_id wrote"));
}

TEST(UniqueId, SecretsComeFromTheOs) {
  BootstrapSecret a, b;
  ASSERT_TRUE(random_secret(&a).ok());
  ASSERT_TRUE(random_secret(&b).ok());
  EXPECT_NE(a, b);
}

TEST(SocketAddress, ReadsEveryForm) {
  SocketAddress a;
  ASSERT_TRUE(parse_socket_address("10.0.0.1", &a).ok());
  EXPECT_EQ(to_string(a), "10.0.0.1:0");
  ASSERT_TRUE(parse_socket_address("10.0.0.1:29500", &a).ok());
  EXPECT_EQ(a.port, 29500);
  ASSERT_TRUE(parse_socket_address("::1", &a).ok());
  EXPECT_EQ(to_string(a), "[::1]:0");
  ASSERT_TRUE(parse_socket_address("[::1]:80", &a).ok());
  EXPECT_EQ(to_string(a), "[::1]:80");
  ASSERT_TRUE(parse_socket_address("fe80::2%lo", &a).ok());
  EXPECT_NE(a.scope_id, 0u);
  for (const char* bad : {"", "host", "10.0.0.1:", "10.0.0.1:70000", "10.0.0.1:x", "[::1", "[::1]x", "[::1]:",
                          "10.0.0.1%lo", "fe80::1%no-such-if0"}) {
    const Status s = parse_socket_address(bad, &a);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_THAT(s.message(), HasSubstr("e.g. 10.0.0.1")) << bad;
  }
}

TEST(BootstrapEnvironment, TimeoutIsReadAndCheckedNamingTheVariable) {
  {
    ScopedEnv unset("CANOPY_BOOTSTRAP_TIMEOUT_S", nullptr);
    EXPECT_EQ(bootstrap_timeout_from_environment(), std::chrono::seconds(120));
  }
  {
    ScopedEnv half("CANOPY_BOOTSTRAP_TIMEOUT_S", "0.25");
    EXPECT_EQ(bootstrap_timeout_from_environment(), std::chrono::milliseconds(250));
    EXPECT_EQ(seconds_text(bootstrap_timeout_from_environment()), "0.25 s");
  }
  for (const char* bad : {"soon", "-1", "0", "12s", "1e9"}) {
    ScopedEnv v("CANOPY_BOOTSTRAP_TIMEOUT_S", bad);
    try {
      (void)bootstrap_timeout_from_environment();
      ADD_FAILURE() << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("CANOPY_BOOTSTRAP_TIMEOUT_S='" + std::string(bad) + "'"));
    }
    UniqueId id;
    const Status s = make_unique_id(&id);  // the Status API returns it
    EXPECT_EQ(s.code(), StatusCode::invalid_argument);
    EXPECT_THAT(s.message(), HasSubstr("CANOPY_BOOTSTRAP_TIMEOUT_S"));
  }
}

TEST(BootstrapEnvironment, AuthTimeoutIsReadAndCheckedNamingTheVariable) {
  {
    ScopedEnv unset("CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S", nullptr);
    EXPECT_EQ(bootstrap_auth_timeout_from_environment(), std::chrono::seconds(5));
    BootstrapOptions options;
    options.timeout = std::chrono::seconds(1);
    EXPECT_EQ(settle(options).auth_timeout, std::chrono::seconds(5));
    options.auth_timeout = std::chrono::milliseconds(300);  // the option wins
    EXPECT_EQ(settle(options).auth_timeout, std::chrono::milliseconds(300));
  }
  {
    ScopedEnv half("CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S", "0.5");
    EXPECT_EQ(bootstrap_auth_timeout_from_environment(), std::chrono::milliseconds(500));
  }
  for (const char* bad : {"never", "0", "-2", "5s", "3601"}) {
    ScopedEnv v("CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S", bad);
    try {
      (void)bootstrap_auth_timeout_from_environment();
      ADD_FAILURE() << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S='" + std::string(bad) + "': expected the "
                                      "seconds the bootstrap root gives a new connection to send the secret, 0.001 "
                                      "to 3600"));
    }
    UniqueId id;
    const Status s = make_unique_id(&id);
    EXPECT_EQ(s.code(), StatusCode::invalid_argument);
    EXPECT_THAT(s.message(), HasSubstr("CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S"));
  }
}

TEST(BootstrapEnvironment, ListenAddressFollowsTheVariablesInOrder) {
  ScopedEnv no_ifname("CANOPY_SOCKET_IFNAME", nullptr);
  {
    ScopedEnv addr("CANOPY_BOOTSTRAP_ADDR", "127.0.0.1:4242");
    EXPECT_EQ(to_string(bootstrap_listen_address().address), "127.0.0.1:4242");
    ScopedEnv ifname("CANOPY_SOCKET_IFNAME", "lo");  // the address wins
    EXPECT_EQ(bootstrap_listen_address().why, "CANOPY_BOOTSTRAP_ADDR");
  }
  ScopedEnv no_addr("CANOPY_BOOTSTRAP_ADDR", nullptr);
  {
    ScopedEnv ifname("CANOPY_SOCKET_IFNAME", "lo");
    const ListenChoice lo = bootstrap_listen_address();
    EXPECT_THAT(host_text(lo.address), ::testing::AnyOf("127.0.0.1", "::1"));
    EXPECT_EQ(lo.address.port, 0);
  }
  const ListenChoice fallback = bootstrap_listen_address();  // an up interface's IPv4, else loopback
  EXPECT_EQ(fallback.address.family, 4);
}

TEST(BootstrapEnvironment, MalformedAddressVariablesAreErrorsNamingThem) {
  {
    ScopedEnv addr("CANOPY_BOOTSTRAP_ADDR", "not-an-address");
    EXPECT_THROW(
        {
          try {
            (void)bootstrap_listen_address();
          } catch (const Error& e) {
            EXPECT_THAT(e.what(), HasSubstr("CANOPY_BOOTSTRAP_ADDR='not-an-address'"));
            throw;
          }
        },
        Error);
    UniqueId id;
    EXPECT_THAT(make_unique_id(&id).message(), HasSubstr("CANOPY_BOOTSTRAP_ADDR"));
  }
  ScopedEnv no_addr("CANOPY_BOOTSTRAP_ADDR", nullptr);
  ScopedEnv ifname("CANOPY_SOCKET_IFNAME", "no-such-if0");
  UniqueId id;
  const Status s = make_unique_id(&id);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_THAT(s.message(), HasSubstr("CANOPY_SOCKET_IFNAME='no-such-if0': no interface of that name"));
  EXPECT_THAT(s.message(), HasSubstr("lo"));
}

TEST(BootstrapEnvironment, AnAddressOfAnotherHostCannotBeListenedOn) {
  ScopedEnv addr("CANOPY_BOOTSTRAP_ADDR", "192.0.2.1");  // TEST-NET-1: never this host's
  UniqueId id;
  const Status s = make_unique_id(&id);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_THAT(s.message(), HasSubstr("cannot listen on 192.0.2.1:0"));
  EXPECT_THAT(s.message(), HasSubstr("set CANOPY_BOOTSTRAP_ADDR to an address of this host"));
}

}  // namespace
}  // namespace canopy
