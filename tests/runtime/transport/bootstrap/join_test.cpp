// Ranks on threads of this process joining a root over loopback: groups of 1 to 8 ranks form and allgather in rank
// order, and every misconfiguration (nranks, duplicate rank, version, a missing rank, no root) ends each rank with
// an error naming the cause, within the timeout.
#include <gmock/gmock.h>

#include <atomic>
#include <chrono>
#include <future>

#include "tests/runtime/transport/bootstrap/bootstrap_test_util.hpp"

namespace canopy::testing {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;

class BootstrapGroup : public BootstrapTest, public ::testing::WithParamInterface<int> {};

TEST_P(BootstrapGroup, JoinsAndAllgathersInRankOrder) {
  const int n = GetParam();
  const UniqueId id = start_root(milliseconds(4000));
  std::vector<RankSpec> specs;
  for (int r = n - 1; r >= 0; --r) specs.push_back({n, r});  // join order does not matter
  const std::vector<RankOutcome> outcomes = run_ranks(id, specs, options(milliseconds(4000)));
  std::vector<std::string> hellos, gathers;
  for (int r = 0; r < n; ++r) hellos.push_back("hello " + std::to_string(r)), gathers.push_back("gather " + std::to_string(r));
  for (const RankOutcome& o : outcomes) {
    ASSERT_TRUE(o.join.ok()) << o.join.to_string();
    EXPECT_EQ(o.welcome, hellos);
    ASSERT_TRUE(o.gather.ok()) << o.gather.to_string();
    EXPECT_EQ(o.gathered, gathers);
    EXPECT_TRUE(o.barrier.ok()) << o.barrier.to_string();
  }
  EXPECT_TRUE(wait_for_bootstrap_root(id, milliseconds(4000)));  // every rank left: the root ends
  EXPECT_EQ(log_->count("all " + std::to_string(n) + " ranks joined"), 1) << log_->all();
}

INSTANTIATE_TEST_SUITE_P(Ranks, BootstrapGroup, ::testing::Values(1, 2, 4, 8));

TEST_F(BootstrapTest, ManyRoundsKeepTheirOrder) {
  const UniqueId id = start_root(milliseconds(4000));
  std::vector<Status> failures(3);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> b;
      failures[r] = Bootstrap::join(id, 3, r, "", &b, options(milliseconds(4000)));
      for (int round = 0; round < 50 && failures[r].ok(); ++round) {
        std::vector<std::string> all;
        failures[r] = b->allgather(std::to_string(round * 10 + r), &all);
        if (failures[r].ok() && all != std::vector<std::string>{std::to_string(round * 10), std::to_string(round * 10 + 1),
                                                                std::to_string(round * 10 + 2)})
          failures[r] = Status(StatusCode::internal, "round " + std::to_string(round) + " mixed up");
      }
    });
  for (std::thread& t : ranks) t.join();
  for (const Status& s : failures) EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST_F(BootstrapTest, ARetiredRootStopsAtOnceAndTakesNoRank) {
  // The NCCL API's grouped inits make every rank of an id in one process without the bootstrap: the root they retire
  // must not wait out its timeout, and a rank that comes anyway finds no one listening.
  const UniqueId id = start_root(milliseconds(60000));
  const auto started = std::chrono::steady_clock::now();
  retire_bootstrap_root(id);
  EXPECT_TRUE(wait_for_bootstrap_root(id, milliseconds(0)));
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(2000));
  retire_bootstrap_root(id);  // twice, or for an id made elsewhere: nothing
  const auto outcomes = run_ranks(id, {{2, 0}}, options(milliseconds(500)));
  EXPECT_FALSE(outcomes[0].join.ok());
}

// Every outcome's join failed with a message containing each of `words`.
void expect_all_failed(const std::vector<RankOutcome>& outcomes, const std::vector<std::string>& words) {
  for (const RankOutcome& o : outcomes) {
    EXPECT_FALSE(o.join.ok());
    EXPECT_EQ(o.join.code(), StatusCode::remote_error);
    for (const std::string& w : words) EXPECT_THAT(o.join.message(), HasSubstr(w));
  }
}

TEST_F(BootstrapTest, DifferentNranksFailEveryRankSayingWhoSaidWhat) {
  const UniqueId id = start_root(milliseconds(1000));
  const auto outcomes = run_ranks(id, {{2, 0}, {3, 1}}, options(milliseconds(1000)));
  expect_all_failed(outcomes, {"the group failed: rank ", "says the group has ", "give every rank the same nranks"});
  EXPECT_THAT(outcomes[0].join.message(), ::testing::AnyOf(HasSubstr("has 3 ranks, but rank 0 (at 127.0.0.1:"),
                                                           HasSubstr("has 2 ranks, but rank 1 (at 127.0.0.1:")));
  EXPECT_TRUE(wait_for_bootstrap_root(id, milliseconds(3000)));  // it tells ranks that come late for 1 s
}

TEST_F(BootstrapTest, DuplicateRankFailsNamingBothPeers) {
  const UniqueId id = start_root(milliseconds(1000));
  const auto outcomes = run_ranks(id, {{3, 0}, {3, 1}, {3, 1}}, options(milliseconds(1000)));
  expect_all_failed(outcomes, {"rank 1 joined twice: from 127.0.0.1:", " and from 127.0.0.1:",
                               "give each process its own rank"});
  EXPECT_EQ(log_->count("the group failed: rank 1 joined twice"), 1) << log_->all();
}

TEST_F(BootstrapTest, VersionMismatchNamesTheRankAndBothVersions) {
  const UniqueId id = start_root(milliseconds(1000));
  const auto outcomes = run_ranks(id, {{2, 0}, {2, 1, "0.0.0-other"}}, options(milliseconds(1000)));
  expect_all_failed(outcomes, {"runs Canopy 0.0.0-other", "runs Canopy " CANOPY_VERSION,
                               "run one Canopy version in every process"});
}

TEST_F(BootstrapTest, MissingRankTimesOutNamingIt) {
  const BootstrapOptions o = options(milliseconds(1000));
  const UniqueId id = start_root(milliseconds(1000));
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = run_ranks(id, {{4, 0}, {4, 1}}, o);
  expect_all_failed(outcomes, {"the group failed: ranks 2, 3 of 4 did not join within 1 s "
                               "(CANOPY_BOOTSTRAP_TIMEOUT_S)"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2500));
  EXPECT_TRUE(wait_for_bootstrap_root(id, milliseconds(2000)));
}

TEST_F(BootstrapTest, RankLostBeforeTheGroupFormedFailsTheOthersNamingIt) {
  const UniqueId id = start_root(milliseconds(3000));
  RawPeer rank1(id);  // says HELLO, then its process ends
  rank1.send(rank1.auth() + encode_frame(Hello{CANOPY_VERSION, 3, 1, ""}));
  rank1.close();
  const auto outcomes = run_ranks(id, {{3, 0}}, options(milliseconds(3000)));
  expect_all_failed(outcomes, {"the group failed: rank 1 (at 127.0.0.1:", "closed its connection before all 3 ranks "
                               "joined"});
}

// Rank 1 of 2 on a thread: joins, then takes part in nothing until `done` is set.
std::thread silent_rank1(const UniqueId& id, const BootstrapOptions& o, std::shared_future<void> done) {
  return std::thread([id, o, done] {
    std::unique_ptr<Bootstrap> b;
    EXPECT_TRUE(Bootstrap::join(id, 2, 1, "", &b, o).ok());
    done.wait();
  });
}

TEST_F(BootstrapTest, RankMissingFromAnAllgatherRoundTimesOutNamingIt) {
  const BootstrapOptions o = options(milliseconds(1000));
  const UniqueId id = start_root(milliseconds(1000));
  std::promise<void> rank0_done;
  std::thread rank1 = silent_rank1(id, o, rank0_done.get_future().share());
  std::unique_ptr<Bootstrap> rank0;
  ASSERT_TRUE(Bootstrap::join(id, 2, 0, "", &rank0, o).ok());
  std::vector<std::string> all;
  const Status s = rank0->allgather("mine", &all);
  rank0_done.set_value();
  rank1.join();
  EXPECT_EQ(s.message(), "bootstrap (rank 0 of 2): the group failed: allgather round 0: rank 1 of 2 did not take part "
                         "within 1 s (CANOPY_BOOTSTRAP_TIMEOUT_S)");
  EXPECT_EQ(rank0->barrier().message(), s.message());  // the group is gone
}

// A rank waiting in an allgather whose give-up says so (its communicator failed meanwhile: a mismatched call, an
// abort from another thread) stops within ~100 ms, long before the round's timeout, saying it gave up; the group is
// gone for it afterwards, as after any error. Before the give-up flips, the wait goes on.
TEST_F(BootstrapTest, AnAllgatherStopsWaitingOnceItsGiveUpSaysSo) {
  const BootstrapOptions o = options(milliseconds(30000));
  const UniqueId id = start_root(milliseconds(30000));
  std::promise<void> rank0_done;
  std::thread rank1 = silent_rank1(id, o, rank0_done.get_future().share());
  std::unique_ptr<Bootstrap> rank0;
  ASSERT_TRUE(Bootstrap::join(id, 2, 0, "", &rank0, o).ok());
  std::atomic<bool> failed{false};
  rank0->set_give_up([&] { return failed.load(); });
  const auto started = std::chrono::steady_clock::now();
  std::thread fail_later([&] {
    std::this_thread::sleep_for(milliseconds(300));  // the time a peer's failure takes to arrive, not a sync
    failed = true;
  });
  std::vector<std::string> all;
  const Status s = rank0->allgather("mine", &all);
  const auto waited = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
  fail_later.join();
  rank0_done.set_value();
  rank1.join();
  EXPECT_EQ(s.code(), StatusCode::remote_error);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("stopped waiting for the result of allgather round 0"));
  EXPECT_THAT(s.message(), ::testing::HasSubstr("this rank's communicator failed meanwhile"));
  EXPECT_GE(waited.count(), 300) << "it waited until the give-up said so";
  EXPECT_LT(waited.count(), 5000) << "not the round's 30 s timeout";
  EXPECT_EQ(rank0->barrier().message(), s.message());  // the group is gone
}

TEST_F(BootstrapTest, UnreachableRootIsReportedWithinTheTimeout) {
  UniqueIdContents c;
  c.root = ipv4_loopback();
  {  // a port nothing listens on: one the OS just gave and took back
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor probe(io, {boost::asio::ip::address_v4::loopback(), 0});
    c.root.port = probe.local_endpoint().port();
  }
  std::unique_ptr<Bootstrap> b;
  const auto start = std::chrono::steady_clock::now();
  const Status s = Bootstrap::join(encode_unique_id(c), 2, 0, "", &b, options(milliseconds(500)));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), StatusCode::remote_error);
  EXPECT_THAT(s.message(), HasSubstr("cannot reach the bootstrap root at 127.0.0.1:" + std::to_string(c.root.port) +
                                     " within 0.5 s: Connection refused"));
  EXPECT_GE(took, milliseconds(500));  // it kept trying: the root may start late
  EXPECT_LT(took, milliseconds(1500));
}

TEST_F(BootstrapTest, ArgumentsAreChecked) {
  UniqueId id = encode_unique_id({ipv4_loopback(), {}});
  id.bytes[8] = 1;  // a port
  std::unique_ptr<Bootstrap> b;
  const BootstrapOptions o = options(milliseconds(100));
  EXPECT_THAT(Bootstrap::join(id, 0, 0, "", &b, o).message(), HasSubstr("nranks is 0"));
  EXPECT_THAT(Bootstrap::join(id, 2, 2, "", &b, o).message(), HasSubstr("rank 2 is not a rank of 2 (0 to 1)"));
  EXPECT_THAT(Bootstrap::join(id, 2, -1, "", &b, o).message(), HasSubstr("rank -1"));
  EXPECT_THAT(Bootstrap::join(id, 1, 0, "", nullptr, o).message(), HasSubstr("`out` is null"));
  EXPECT_THAT(Bootstrap::join(id, 1, 0, std::string(2 << 20, 'p'), &b, o).message(), HasSubstr("send the rest"));
  EXPECT_THAT(Bootstrap::join(UniqueId{}, 1, 0, "", &b, o).message(), HasSubstr("does not start with 'cnpy'"));
  EXPECT_THAT(make_unique_id(nullptr).message(), HasSubstr("`out` is null"));
}

TEST_F(BootstrapTest, Ipv6LoopbackGroupForms) {
  ScopedEnv v6("CANOPY_BOOTSTRAP_ADDR", "[::1]");
  UniqueId id;
  const Status made = make_unique_id(&id, options(milliseconds(3000)));
  if (!made.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << made.message();
  for (const RankOutcome& o : run_ranks(id, {{2, 0}, {2, 1}}, options(milliseconds(3000))))
    EXPECT_TRUE(o.gather.ok()) << o.join.to_string() << o.gather.to_string();
}

}  // namespace
}  // namespace canopy::testing
