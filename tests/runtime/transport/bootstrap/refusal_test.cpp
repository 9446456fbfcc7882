// What the root refuses while the real ranks still form their group: a HELLO with the wrong secret, a replayed
// HELLO (on the same connection, and on a new one after the group formed), and bytes that are no frame at all.
// Each refusal is one warning in the log and nothing for the peer but a closed connection.
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
                                     "a HELLO whose secret is wrong"));
  EXPECT_EQ(log_->count("dropped a connection from 127.0.0.1:"), 1) << log_->all();
  EXPECT_EQ(log_->count("its HELLO carries the wrong secret"), 1) << log_->all();
  EXPECT_TRUE(real_ranks_form(id, options(milliseconds(3000))));
  EXPECT_TRUE(wait_for_bootstrap_root(id, milliseconds(3000)));
}

TEST_F(BootstrapTest, ReplayedHellosAreRefusedAndLogged) {
  const UniqueId id = start_root(milliseconds(3000));
  RawPeer rank0(id);  // a rank by hand, saying HELLO twice on one connection
  Hello hello{rank0.secret(), CANOPY_VERSION, 2, 0, "raw"};
  rank0.send(encode_frame(hello) + encode_frame(hello));
  std::vector<RankOutcome> rank1;
  std::thread rank1_thread([&] { rank1 = run_ranks(id, {{2, 1}}, options(milliseconds(3000))); });
  Frame frame;
  ASSERT_TRUE(rank0.receive(&frame));
  Welcome welcome;
  ASSERT_EQ(frame.type, MessageType::welcome);
  ASSERT_TRUE(decode_body(frame.body, &welcome).ok());
  EXPECT_EQ(welcome.payloads, (std::vector<std::string>{"raw", "hello 1"}));

  RawPeer replay(id);  // the same HELLO again, once the group has formed
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
  const UniqueId id = start_root(milliseconds(3000));
  std::mt19937_64 rng = seeded_rng("bootstrap garbage");
  std::string noise(200, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  noise[0] = 'X';  // never the magic
  const std::string garbage[] = {
      noise,
      "GET / HTTP/1.1\r\nHost: canopy\r\n\r\n",
      raw_frame(kFrameMagic, 1, 1, kMaxFrameBody),  // a HELLO too long to read before its secret is checked
      raw_frame(kFrameMagic, 7, 1, 0),              // another protocol version
      raw_frame(kFrameMagic, 1, 3, 5, "abcde"),     // an ALLGATHER first
      raw_frame(kFrameMagic, 1, 1, 5, "abcde"),     // a HELLO cut short
      "",                                            // connect and close
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
  EXPECT_EQ(log_->count("not a Canopy bootstrap message"), 2) << log_->all();
  EXPECT_EQ(log_->count("over the limit of 1048576"), 1) << log_->all();
  EXPECT_EQ(log_->count("protocol version 7"), 1) << log_->all();
  EXPECT_EQ(log_->count("its first message is a ALLGATHER, not a HELLO"), 1) << log_->all();
  EXPECT_EQ(log_->count("too short for the 16-byte secret"), 1) << log_->all();
  EXPECT_TRUE(wait_for_bootstrap_root(id, milliseconds(3000)));
}

}  // namespace
}  // namespace canopy::testing
