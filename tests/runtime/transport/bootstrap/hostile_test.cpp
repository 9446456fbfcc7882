// A bootstrap root under attack from strangers on the network, who do not know the secret: hundreds of connections
// that never speak, that claim bodies of 1 GiB, that drip bytes, that carry wrong secrets; and the listener once the
// group has formed. Each test starts a real root in this process (make_unique_id), attacks it over loopback, and ends
// with the real ranks joining within a bound, the process's resident memory grown by less than 16 MiB and its CPU time
// a small share of the attack's wall time. The root's process running out of descriptors is
// hostile_process_test.cpp's. docs/multi-process.md ("What a stranger on the network can and cannot do") cites these.
#include <gmock/gmock.h>

#include <random>
#include <thread>

#include "tests/runtime/transport/bootstrap/hostile_peers.hpp"

namespace canopy::testing {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A rank's join (connect, AUTH, HELLO, WELCOME) takes about a millisecond on an idle machine, and each flood below
// costs the root well under 100 ms of work. 5 s leaves room for a loaded 2-core CI machine and is a sixth of the
// bootstrap timeout the tests use: a join that had to wait for a timeout would fail the bound.
constexpr auto kJoinBound = seconds(5);
constexpr auto kTimeout = seconds(30);
// CPU is measured over at least this much wall time from the attack's start: a root that spun would spend it all.
constexpr auto kWatch = seconds(1);
constexpr int kFlood = 200;

class BootstrapHostile : public BootstrapTest {
 protected:
  // Ranks 0..n-1 of n join on threads and allgather; all succeed within kJoinBound. How long they took.
  std::chrono::duration<double> real_ranks_join(const UniqueId& id, int n) {
    std::vector<RankSpec> specs;
    for (int r = 0; r < n; ++r) specs.push_back({n, r});
    const auto start = Clock::now();
    for (const RankOutcome& o : run_ranks(id, specs, options(kTimeout)))
      EXPECT_TRUE(o.barrier.ok()) << o.join.to_string() << " / " << o.gather.to_string();
    EXPECT_LT(Clock::now() - start, kJoinBound);
    return Clock::now() - start;
  }
  // The root's log stayed short: at most kWarningsPerInterval lines of dropped connections an interval, plus a
  // summary each, since `start`; and they account for exactly `dropped` connections.
  void expect_drops_logged_in_brief(int dropped, Clock::time_point start) {
    int lines = 0;
    EXPECT_EQ(dropped_in_log(*log_, &lines), dropped) << log_->all();
    const int intervals = 1 + static_cast<int>((Clock::now() - start) / kWarningInterval);
    EXPECT_LE(lines, intervals * (kWarningsPerInterval + 1)) << log_->all();
  }
  void expect_calm(const ProcessUse& before, const ProcessUse& attack_over, std::chrono::duration<double> join) {
    const long rss_kib = process_use().rss_kib;
    print_measured(::testing::UnitTest::GetInstance()->current_test_info()->name(), before, attack_over, rss_kib, join);
    EXPECT_LT(rss_kib - before.rss_kib, kMaxGrowthKib);
    EXPECT_LT(cpu_share(before, attack_over), kMaxCpuShare)
        << "CPU " << attack_over.cpu_s - before.cpu_s << " s over "
        << std::chrono::duration<double>(attack_over.at - before.at).count() << " s";
  }
};

// The default deadline (5 s, CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S unset): of 200 silent connections the root keeps the
// newest 64, each new one past that replacing the oldest at once; a rank that comes during the flood is admitted at
// once (its connection replaces the oldest silent one); the silent ones kept are closed 5 s after they came, not
// before; a rank that comes after joins as usual.
TEST_F(BootstrapHostile, SilentConnectionsAreCappedAndClosedAtTheDefaultDeadline) {
  ScopedEnv default_deadline("CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S", nullptr);
  constexpr auto kDeadline = seconds(5);
  const UniqueId id = start_root(kTimeout);
  const ProcessUse before = process_use();
  std::vector<RankOutcome> outcomes[3];
  std::jthread rank0([&] { outcomes[0] = run_ranks(id, {{3, 0}}, options(kTimeout)); });
  ASSERT_TRUE(log_->wait_for("rank 0 of 3 joined", 1, kJoinBound)) << log_->all();

  Strangers silent(root_address(id));
  const auto flood_start = Clock::now();
  silent.connect(kFlood);
  const std::size_t evicted = kFlood - kMaxUnauthenticatedConnections;
  ASSERT_GE(silent.wait_closed(evicted, Clock::now() + kJoinBound), evicted);
  for (std::size_t i = 0; i < kFlood; ++i)  // the oldest went, the newest 64 stay
    EXPECT_EQ(silent.closed_at(i).has_value(), i < evicted) << "connection " << i;

  const auto rank1_start = Clock::now();
  std::jthread rank1([&] { outcomes[1] = run_ranks(id, {{3, 1}}, options(kTimeout)); });
  ASSERT_TRUE(log_->wait_for("rank 1 of 3 joined", 1, kJoinBound)) << log_->all();
  const std::chrono::duration<double> rank1_admitted = Clock::now() - rank1_start;
  EXPECT_LT(rank1_admitted, kJoinBound);

  constexpr auto kLate = seconds(3);  // how late a deadline may be seen on a loaded machine
  EXPECT_EQ(silent.wait_closed(kFlood, silent.connected_at(kFlood - 1) + kDeadline + kLate), std::size_t{kFlood});
  const ProcessUse attack_over = process_use();
  std::size_t at_deadline = 0;
  for (std::size_t i = 0; i < kFlood; ++i) {
    if (silent.closed_at(i).value_or(Clock::time_point::max()) - flood_start < kDeadline / 2)
      continue;  // evicted, seconds before any deadline
    ++at_deadline;
    EXPECT_GE(silent.held_since_connecting(i), kDeadline) << "connection " << i;
    EXPECT_LT(silent.held(i), kDeadline + kLate) << "connection " << i;
  }
  EXPECT_GE(at_deadline, kMaxUnauthenticatedConnections - 1);  // rank 1 took the place of one
  EXPECT_LE(at_deadline, kMaxUnauthenticatedConnections);
  EXPECT_GE(log_->count("and 64 such connections are the most the root keeps: the oldest makes room"), 1);

  const auto rank2_start = Clock::now();
  outcomes[2] = run_ranks(id, {{3, 2}}, options(kTimeout));
  EXPECT_LT(Clock::now() - rank2_start, kJoinBound);
  std::printf("[ measured ] rank 1 was admitted during the flood in %.3f s\n", rank1_admitted.count());
  rank0.join();
  rank1.join();
  for (const auto& o : outcomes) {
    ASSERT_EQ(o.size(), 1u);
    EXPECT_TRUE(o[0].barrier.ok()) << o[0].join.to_string() << " / " << o[0].gather.to_string();
    EXPECT_EQ(o[0].welcome, (std::vector<std::string>{"hello 0", "hello 1", "hello 2"}));
  }
  expect_calm(before, attack_over, Clock::now() - rank2_start);
  expect_drops_logged_in_brief(kFlood, before.at);
}

// Headers claiming bodies of 1 GiB, or of 1 MiB (what a version-1 root read before checking the secret), as AUTH,
// HELLO or ALLGATHER, in this protocol version or version 1: the root reads the 12 bytes of each header into its fixed
// buffer, refuses it and closes the connection at once (the deadline, 60 s here, plays no part), allocating nothing.
TEST_F(BootstrapHostile, HugeLengthClaimsAreRefusedFromTheHeaderAllocatingNothing) {
  const UniqueId id = start_root(kTimeout, seconds(60));
  const ProcessUse before = process_use();
  Strangers claimers(root_address(id));
  constexpr std::uint16_t kTypes[] = {6, 1, 3};  // AUTH, HELLO, ALLGATHER
  for (std::size_t i = 0; i < kFlood; ++i) {
    const std::uint32_t length = (i / 3) % 2 ? std::uint32_t{1} << 30 : kMaxHelloBody;
    const std::uint16_t version = i % 4 == 3 ? 1 : kProtocolVersion;
    claimers.connect(1);
    claimers.send(i, raw_frame(kFrameMagic, version, kTypes[i % 3], length, std::string(64, 'x')));
  }
  EXPECT_EQ(claimers.wait_closed(kFlood, Clock::now() + kJoinBound), std::size_t{kFlood});
  std::this_thread::sleep_until(before.at + kWatch);  // not a synchronisation: the window over which CPU is watched
  const ProcessUse attack_over = process_use();
  expect_calm(before, attack_over, real_ranks_join(id, 2));
  expect_drops_logged_in_brief(kFlood, before.at);
  for (const std::string& line : log_->matching("dropped "))
    EXPECT_THAT(line, ::testing::AnyOf(HasSubstr("but an AUTH's is 16"),
                                       HasSubstr("where a connection's first message must be an AUTH"),
                                       HasSubstr("protocol version 1, but this Canopy speaks version 2")))
        << line;
}

// Senders that drip a well-formed AUTH (with the right secret, even) one byte every 100 to 500 ms: 28 bytes would
// take at least 2.8 s, and the root closes each at its deadline (1 s here), whatever it has sent. A rank that comes
// meanwhile is admitted at once.
TEST_F(BootstrapHostile, SlowDripSendersAreClosedAtTheDeadline) {
  constexpr auto kDeadline = seconds(1);
  constexpr int kDrips = 40;
  const UniqueId id = start_root(kTimeout, kDeadline);
  std::mt19937_64 rng = seeded_rng("bootstrap slow drip");
  UniqueIdContents contents;
  ASSERT_TRUE(decode_unique_id(id, &contents).ok());
  const std::string auth = encode_frame(Auth{contents.secret});
  const ProcessUse before = process_use();
  Strangers drips(root_address(id));
  drips.connect(kDrips);
  std::vector<Clock::time_point> next(kDrips);
  std::vector<milliseconds> gap(kDrips);
  for (int i = 0; i < kDrips; ++i) gap[i] = milliseconds(100 + rng() % 401), next[i] = drips.connected_at(i) + gap[i];
  std::vector<std::size_t> sent(kDrips, 0);
  std::jthread dripper([&] {  // owns `drips` until it ends: when the root has closed every one
    const auto give_up = Clock::now() + seconds(20);
    while (drips.closed() < kDrips && Clock::now() < give_up) {
      const auto first = std::min_element(next.begin(), next.end());
      drips.wait_closed(kDrips, *first);  // the attacker's pace, watching for closes meanwhile
      const std::size_t i = first - next.begin();
      if (Clock::now() < *first) continue;
      if (sent[i] < auth.size() && drips.send(i, auth.substr(sent[i], 1))) ++sent[i];
      next[i] = drips.closed_at(i) ? Clock::time_point::max() : Clock::now() + gap[i];
    }
  });
  std::vector<RankOutcome> rank0;
  const auto rank0_start = Clock::now();
  std::jthread rank0_thread([&] { rank0 = run_ranks(id, {{2, 0}}, options(kTimeout)); });
  ASSERT_TRUE(log_->wait_for("rank 0 of 2 joined", 1, kJoinBound)) << log_->all();
  const std::chrono::duration<double> rank0_admitted = Clock::now() - rank0_start;
  dripper.join();
  const ProcessUse attack_over = process_use();
  ASSERT_EQ(drips.closed(), std::size_t{kDrips});
  for (int i = 0; i < kDrips; ++i) {
    EXPECT_GE(drips.held_since_connecting(i), kDeadline) << "drip " << i;
    EXPECT_LT(drips.held(i), kDeadline + seconds(2)) << "drip " << i;
    EXPECT_LT(sent[i], auth.size()) << "drip " << i;
  }
  for (const std::string& line : log_->matching("dropped "))  // ten lines and a summary
    EXPECT_THAT(line, HasSubstr("bytes of its AUTH within 1 s (CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S)"));
  const std::vector<RankOutcome> rank1 = run_ranks(id, {{2, 1}}, options(kTimeout));
  rank0_thread.join();
  EXPECT_TRUE(rank0.at(0).barrier.ok()) << rank0.at(0).join.to_string();
  EXPECT_TRUE(rank1.at(0).barrier.ok()) << rank1.at(0).join.to_string();
  expect_calm(before, attack_over, rank0_admitted);
  expect_drops_logged_in_brief(kDrips, before.at);
}

// Well-formed AUTHs carrying other secrets (a stale id, another job, a guess), each followed by a HELLO as a rank
// would send: each is dropped as soon as its 28 bytes are in (the deadline, 60 s here, plays no part), and the log
// keeps to ten lines and a summary.
TEST_F(BootstrapHostile, WrongSecretsAreDroppedAtOnceAndLoggedInBrief) {
  const UniqueId id = start_root(kTimeout, seconds(60));
  UniqueIdContents contents;
  ASSERT_TRUE(decode_unique_id(id, &contents).ok());
  std::mt19937_64 rng = seeded_rng("bootstrap wrong secrets");
  const ProcessUse before = process_use();
  Strangers liars(root_address(id));
  for (std::size_t i = 0; i < kFlood; ++i) {
    Auth guess{contents.secret};
    while (guess.secret == contents.secret)
      for (unsigned char& b : guess.secret) b = static_cast<unsigned char>(rng());
    liars.connect(1);
    liars.send(i, encode_frame(guess) + encode_frame(Hello{CANOPY_VERSION, 2, static_cast<std::uint32_t>(i % 2), ""}));
  }
  EXPECT_EQ(liars.wait_closed(kFlood, Clock::now() + kJoinBound), std::size_t{kFlood});
  std::this_thread::sleep_until(before.at + kWatch);  // not a synchronisation: the window over which CPU is watched
  const ProcessUse attack_over = process_use();
  expect_calm(before, attack_over, real_ranks_join(id, 2));
  expect_drops_logged_in_brief(kFlood, before.at);
  for (const std::string& line : log_->matching("dropped "))
    EXPECT_THAT(line, HasSubstr("its AUTH carries the wrong secret (a unique id from another job, or a stale one)"));
  EXPECT_GE(log_->count("more connections in the last 10 s (at most 10 are logged one by one an interval); the "
                        "last: bootstrap root 127.0.0.1:"),
            1)
      << log_->all();
}

// Once every rank has said HELLO, the root closes its listener (a split or a new group makes a new id, with its own
// root): connections that had not authenticated are dropped, and a new one is refused by the host.
TEST_F(BootstrapHostile, TheListenerClosesOnceTheGroupForms) {
  const UniqueId id = start_root(kTimeout, seconds(60));
  const SocketAddress root = root_address(id);
  Strangers early(root);
  early.connect(3);
  std::unique_ptr<Bootstrap> ranks[2];
  std::jthread rank1([&] { EXPECT_TRUE(Bootstrap::join(id, 2, 1, "", &ranks[1], options(kTimeout)).ok()); });
  ASSERT_TRUE(Bootstrap::join(id, 2, 0, "", &ranks[0], options(kTimeout)).ok());
  rank1.join();
  EXPECT_EQ(early.wait_closed(3, Clock::now() + kJoinBound), 3u);
  EXPECT_EQ(log_->count("the group has formed: the root takes no more connections"), 3) << log_->all();
  EXPECT_EQ(log_->count("stopped listening: the group has formed"), 1) << log_->all();
  EXPECT_EQ(connect_to(root), -1);  // while the ranks are still in the group
  EXPECT_EQ(errno, ECONNREFUSED);
  std::vector<std::string> all;
  EXPECT_TRUE(ranks[0] && ranks[1]);
  std::jthread barrier1([&] { EXPECT_TRUE(ranks[1]->barrier().ok()); });
  EXPECT_TRUE(ranks[0]->allgather("still here", &all).ok());
}

// A root that ends (here: nobody joined within its timeout) while strangers wait to authenticate drops them all and
// ends (bootstrap_root_fuzz found this path reading a connection it had just freed).
TEST_F(BootstrapHostile, StrangersWaitingWhenTheRootEndsAreDropped) {
  const UniqueId id = start_root(milliseconds(300), seconds(60));
  Strangers silent(root_address(id));
  silent.connect(5);
  EXPECT_TRUE(wait_for_bootstrap_root(id, kJoinBound));
  EXPECT_EQ(silent.wait_closed(5, Clock::now() + kJoinBound), 5u);
  EXPECT_EQ(log_->count("the root ends: the root takes no more connections"), 5) << log_->all();
  EXPECT_EQ(log_->count("no rank joined within 0.3 s"), 1) << log_->all();
}

}  // namespace
}  // namespace canopy::testing
