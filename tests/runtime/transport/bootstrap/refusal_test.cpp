// What the root refuses while the real ranks still form their group: an AUTH with the wrong secret, a replayed HELLO
// (on the same connection, and on an authenticated one after the group formed), bytes that are no AUTH at all, and a
// Canopy of another protocol version. Each refusal is one warning in the log and nothing for the peer but a closed
// connection, except the other version, which is told ours in its own terms (and a rank told so by a root of another
// version says so too). Floods of such connections are hostile_test.cpp's.
#include <gmock/gmock.h>

#include "tests/runtime/transport/bootstrap/bootstrap_test_util.hpp"

namespace canopy::testing {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;

// Ranks 0 and 1 of 2 join and allgather with `options`; true when both succeeded.
bool real_ranks_form(const UniqueId& id, const BootstrapOptions& options) {
  bool ok = true;
  for (const RankOutcome& o : run_ranks(id, {{2, 0}, {2, 1}}, options)) {
    EXPECT_TRUE(o.gather.ok()) << o.join.to_string() << " / " << o.gather.to_string();
    ok = ok && o.gather.ok() && o.gathered == std::vector<std::string>{"gather 0", "gather 1"};
  }
  return ok;
}

TEST_F(BootstrapTest, WrongSecretIsDroppedAndTheGroupStillForms) {
  const UniqueId id = start_root(milliseconds(3000));
  UniqueId stale = id;
  stale.bytes[30] ^= 0x5a;  // a byte of the secret
  std::unique_ptr<Bootstrap> intruder;
  const Status s = Bootstrap::join(stale, 2, 0, "", &intruder, options(milliseconds(2000)));
  EXPECT_EQ(s.code(), StatusCode::remote_error);
  EXPECT_THAT(s.message(), HasSubstr("closed the connection while this rank waited for its WELCOME (the root drops "
                                     "a connection whose secret is wrong"));
  EXPECT_EQ(log_->count("dropped a connection from 127.0.0.1:"), 1) << log_->all();
  EXPECT_EQ(log_->count("its AUTH carries the wrong secret"), 1) << log_->all();
  EXPECT_TRUE(real_ranks_form(id, options(milliseconds(3000))));
  EXPECT_TRUE(wait_for_bootstrap_root(id, milliseconds(3000)));
}

TEST_F(BootstrapTest, ReplayedHellosAreRefusedAndLogged) {
  logger_ = log_->logger(LogLevel::debug);  // to see each connection authenticate
  const UniqueId id = start_root(milliseconds(3000));
  RawPeer rank0(id);  // a rank by hand, saying HELLO twice on one connection
  Hello hello{CANOPY_VERSION, 2, 0, "raw"};
  rank0.send(rank0.auth() + encode_frame(hello) + encode_frame(hello));
  RawPeer replay(id);  // authenticated before the group forms; says the same HELLO once it has
  replay.send(replay.auth());
  ASSERT_TRUE(log_->wait_for("authenticated", 2, milliseconds(3000))) << log_->all();
  std::vector<RankOutcome> rank1;
  std::thread rank1_thread([&] { rank1 = run_ranks(id, {{2, 1}}, options(milliseconds(3000))); });
  Frame frame;
  ASSERT_TRUE(rank0.receive(&frame));
  Welcome welcome;
  ASSERT_EQ(frame.type, MessageType::welcome);
  ASSERT_TRUE(decode_body(frame.body, &welcome).ok());
  EXPECT_EQ(welcome.payloads, (std::vector<std::string>{"raw", "hello 1"}));

  replay.send(encode_frame(hello));
  EXPECT_FALSE(replay.receive(&frame));  // closed, nothing said
  EXPECT_EQ(log_->count("refused its HELLO as rank 0: the group has formed"), 1) << log_->all();

  for (int round = 0; round < 2; ++round) {  // allgather and barrier, with rank 1
    rank0.send(encode_frame(Allgather{static_cast<std::uint32_t>(round), round == 0 ? "gather 0" : ""}));
    ASSERT_TRUE(rank0.receive(&frame));
    EXPECT_EQ(frame.type, MessageType::allgather_result);
  }
  rank1_thread.join();
  ASSERT_EQ(rank1.size(), 1u);
  EXPECT_TRUE(rank1[0].barrier.ok()) << rank1[0].join.to_string() << rank1[0].gather.to_string();
  // The second HELLO came before the ALLGATHER on the same connection, so it has been handled by now.
  EXPECT_EQ(log_->count("ignored a second HELLO from rank 0 (at 127.0.0.1:"), 1) << log_->all();
  rank0.close();
  EXPECT_TRUE(wait_for_bootstrap_root(id, milliseconds(3000)));
}

TEST_F(BootstrapTest, GarbageOnThePortIsDroppedAndTheGroupStillForms) {
  const UniqueId id = start_root(milliseconds(3000), milliseconds(300));
  std::mt19937_64 rng = seeded_rng("bootstrap garbage");
  std::string noise(200, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  noise[0] = 'X';  // never the magic
  const std::string garbage[] = {
      noise,
      "GET / HTTP/1.1\r\nHost: canopy\r\n\r\n",
      raw_frame(kFrameMagic, kProtocolVersion, 1, kMaxFrameBody),  // a HELLO first, and as long as any message
      raw_frame(kFrameMagic, kProtocolVersion, 3, 5, "abcde"),      // an ALLGATHER first
      raw_frame(kFrameMagic, kProtocolVersion, 6, 5, "abcde"),      // an AUTH of the wrong size
      raw_frame(kFrameMagic, kProtocolVersion, 6, 16, "abcde"),     // an AUTH cut short: the deadline ends it
      "",                                                           // connect and close
  };
  for (const std::string& bytes : garbage) {
    RawPeer peer(id);
    peer.send(bytes);
    if (bytes.empty()) peer.close();
    Frame frame;
    if (!bytes.empty()) {
      EXPECT_FALSE(peer.receive(&frame));  // the root closes; nothing is said
    }
  }
  EXPECT_TRUE(real_ranks_form(id, options(milliseconds(3000))));
  EXPECT_EQ(log_->count("dropped a connection from"), 7) << log_->all();
  EXPECT_EQ(log_->count("its first message is no AUTH"), 5) << log_->all();
  EXPECT_EQ(log_->count("not a Canopy bootstrap message"), 2) << log_->all();
  EXPECT_EQ(log_->count("a HELLO where a connection's first message must be an AUTH (the secret)"), 1) << log_->all();
  EXPECT_EQ(log_->count("a ALLGATHER where a connection's first message must be an AUTH"), 1) << log_->all();
  EXPECT_EQ(log_->count("AUTH: a body of 5 bytes, but an AUTH's is 16"), 1) << log_->all();
  EXPECT_EQ(log_->count("it sent 17 of the 28 bytes of its AUTH within 0.3 s (CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S)"), 1)
      << log_->all();
  EXPECT_EQ(log_->count("it closed after 0 of the 28 bytes of its AUTH"), 1) << log_->all();
  EXPECT_TRUE(wait_for_bootstrap_root(id, milliseconds(3000)));
}

// A Canopy of another release opens with a frame of its own protocol version (version 1 sent the HELLO, with the
// secret inside, first): the root answers with an ERROR in its own version, whose header the other side's check names
// ("protocol version 2, but this Canopy speaks version 1"), logs the drop and closes.
TEST_F(BootstrapTest, AnotherProtocolVersionIsToldOursAndDropped) {
  const UniqueId id = start_root(milliseconds(3000));
  RawPeer old(id);
  WireWriter v1_hello;  // what a version-1 rank sends: secret, version, nranks, rank, payload
  v1_hello.raw(std::string(old.secret().begin(), old.secret().end()));
  v1_hello.text("0.0.1");
  v1_hello.u32(2);
  v1_hello.u32(0);
  v1_hello.text("old");
  old.send(raw_frame(kFrameMagic, 1, 1, static_cast<std::uint32_t>(v1_hello.bytes().size()), v1_hello.bytes()));
  Frame frame;
  ASSERT_TRUE(old.receive(&frame));
  ASSERT_EQ(frame.type, MessageType::error);
  ErrorMessage told;
  ASSERT_TRUE(decode_body(frame.body, &told).ok());
  EXPECT_THAT(told.text, HasSubstr("refused the connection: malformed bootstrap frame: protocol version 1, but this "
                                   "Canopy speaks version 2: run one Canopy version in every process"));
  EXPECT_FALSE(old.receive(&frame));  // then closed
  EXPECT_EQ(log_->count("protocol version 1, but this Canopy speaks version 2"), 1) << log_->all();
  EXPECT_EQ(log_->count("(it was told so)"), 1) << log_->all();
  EXPECT_TRUE(real_ranks_form(id, options(milliseconds(3000))));
}

// The other direction: a rank whose root runs another protocol version (here a stand-in answering as version 3 would)
// fails naming both versions.
TEST_F(BootstrapTest, ARankToldByARootOfAnotherVersionSaysSo) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::address_v4::loopback(), 0});
  UniqueIdContents c;
  c.root = ipv4_loopback();
  c.root.port = acceptor.local_endpoint().port();
  std::thread newer_root([&] {
    boost::asio::ip::tcp::socket s = acceptor.accept();
    std::array<char, kAuthFrameBytes> first;
    boost::asio::read(s, boost::asio::buffer(first));
    const std::string text = "a newer root";
    WireWriter body;
    body.text(text);
    boost::asio::write(s, boost::asio::buffer(raw_frame(kFrameMagic, 3, 5, 4 + text.size(), body.bytes())));
    boost::system::error_code ignored;
    s.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
    std::array<char, 256> rest;
    while (!ignored) s.read_some(boost::asio::buffer(rest), ignored);  // until the rank closes
  });
  std::unique_ptr<Bootstrap> b;
  const Status s = Bootstrap::join(encode_unique_id(c), 2, 0, "", &b, options(milliseconds(3000)));
  newer_root.join();
  EXPECT_EQ(s.code(), StatusCode::remote_error);
  EXPECT_THAT(s.message(), HasSubstr("answered with a malformed bootstrap frame: protocol version 3, but this Canopy "
                                     "speaks version 2: run one Canopy version in every process"));
}

}  // namespace
}  // namespace canopy::testing
