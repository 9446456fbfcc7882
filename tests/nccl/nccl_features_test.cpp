// The NCCL API's pure parts on any CPU: CANOPY_LOG=info line texts and their once-per-(function, type, size class)
// rule, CANOPY_NCCL_FORWARD and CANOPY_NCCL_REAL parsing, ncclConfig_t reading, the decision to make a real NCCL
// communicator beside Canopy's, PreMulSum operator bookkeeping, and the devices of an in-process init (ncclCommInitAll
// with every rank on one GPU: its virtual ranks).
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "nccl/config/config.hpp"
#include "nccl/config/forward_list.hpp"
#include "nccl/diagnostics/call_log.hpp"
#include "nccl/init/comm_init.hpp"
#include "nccl/premul/premul_ops.hpp"
#include "nccl/real/real_comm.hpp"

namespace {

using namespace canopy::nccl_api;
using canopy::Collective;
using canopy::Communicator;
using canopy::Protocol;

TEST(NcclCallLog, SizeClassesArePowersOfFour) {
  EXPECT_EQ(size_class(0), "0 B");
  EXPECT_EQ(size_class(1), "[1, 4)");
  EXPECT_EQ(size_class(3), "[1, 4)");
  EXPECT_EQ(size_class(4), "[4, 16)");
  EXPECT_EQ(size_class(1023), "[256, 1K)");
  EXPECT_EQ(size_class(1024), "[1K, 4K)");
  EXPECT_EQ(size_class(5u << 20), "[4M, 16M)");
  EXPECT_EQ(size_class(std::uint64_t{1} << 30), "[1G, 4G)");
}

TEST(NcclCallLog, ChoiceTextNamesProtocolAndTrees) {
  Communicator::Choice c;
  c.protocol = Protocol::low_latency;
  EXPECT_EQ(choice_text(c), "LL");
  c.two_shot = true;
  EXPECT_EQ(choice_text(c), "LL two-shot");
  c = {};
  c.protocol = Protocol::ll128;
  EXPECT_EQ(choice_text(c), "LL128");
  c.protocol = Protocol::direct;
  EXPECT_EQ(choice_text(c), "direct");
  c = {};
  c.trees = 4;
  EXPECT_EQ(choice_text(c), "planned trees (4 trees)");
  c.trees = 1;
  EXPECT_EQ(choice_text(c), "planned trees (1 tree)");
  c.copy_engine = true;
  EXPECT_EQ(choice_text(c), "copy engines");
}

TEST(NcclCallLog, LineFormat) {
  EXPECT_EQ(call_log_line("ncclAllReduce", ncclFloat32, 100000, 1, 2, "served by Canopy, LL128"),
            "nccl: ncclAllReduce ncclFloat32 [64K, 256K) (rank 1 of 2): served by Canopy, LL128");
  EXPECT_EQ(call_log_line("ncclSend", static_cast<ncclDataType_t>(ncclNumTypes), 0, 0, 2, "forwarded to the real NCCL"),
            "nccl: ncclSend (rank 0 of 2): forwarded to the real NCCL");
}

TEST(NcclCallLog, OnceAFunctionTypeAndSizeClass) {
  canopy::Logger logger(canopy::LogLevel::info, ~0u);
  std::vector<std::string> lines;
  logger.set_sink([&](std::string_view l) { lines.emplace_back(l); });
  CallLog log(logger);
  int made = 0;
  auto outcome = [&] { return std::string("served by Canopy, LL") + std::to_string(++made); };
  log.note("ncclAllReduce", ncclFloat32, 1000, 0, 2, outcome);
  log.note("ncclAllReduce", ncclFloat32, 1010, 0, 2, outcome);  // same class: not again, not even made
  log.note("ncclAllReduce", ncclFloat16, 1000, 0, 2, outcome);  // another type
  log.note("ncclAllReduce", ncclFloat32, 4096, 0, 2, outcome);  // another class
  log.note("ncclBroadcast", ncclFloat32, 1000, 0, 2, outcome);  // another function
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(made, 4);
  EXPECT_NE(lines[0].find("INFO [run] nccl: ncclAllReduce ncclFloat32 [256, 1K) (rank 0 of 2): served by Canopy, LL1"),
            std::string::npos)
      << lines[0];
  CallLog quiet(canopy::Logger(canopy::LogLevel::warn, ~0u));
  EXPECT_FALSE(quiet.on());
}

TEST(NcclForwardList, ParsesNamesAliasesAndAll) {
  ForwardSet s;
  ASSERT_TRUE(parse_forward_list("", &s).ok());
  EXPECT_TRUE(s.collectives.empty());
  EXPECT_TRUE(s.point_to_point.empty());
  ASSERT_TRUE(parse_forward_list(" AllReduce, bcast,reduce_scatter,,", &s).ok());
  EXPECT_EQ(s.collectives,
            (std::set<Collective>{Collective::allreduce, Collective::broadcast, Collective::reducescatter}));
  EXPECT_TRUE(s.point_to_point.empty());
  ASSERT_TRUE(parse_forward_list("all", &s).ok());
  EXPECT_EQ(s.collectives.size(), 5u);
  EXPECT_EQ(s.point_to_point.size(), 4u) << "all names the point-to-point calls too";
  const canopy::Status bad = parse_forward_list("allreduce,alltoallv", &s);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("CANOPY_NCCL_FORWARD names 'alltoallv'"), std::string::npos) << bad.message();
  EXPECT_NE(bad.message().find("sendrecv, alltoall, gather, scatter"), std::string::npos) << bad.message();
}

TEST(NcclForwardList, NamesThePointToPointCalls) {
  ForwardSet s;
  ASSERT_TRUE(parse_forward_list("sendrecv, AllToAll,gather,scatter", &s).ok());
  EXPECT_TRUE(s.collectives.empty()) << "no collective is forwarded";
  for (PointToPointCall c : {PointToPointCall::sendrecv, PointToPointCall::alltoall, PointToPointCall::gather,
                             PointToPointCall::scatter})
    EXPECT_TRUE(s.names(c)) << to_string(c);
  ASSERT_TRUE(parse_forward_list("send_recv,all_to_all,allreduce", &s).ok());
  EXPECT_EQ(s.point_to_point, (std::set<PointToPointCall>{PointToPointCall::sendrecv, PointToPointCall::alltoall}));
  EXPECT_TRUE(s.names(Collective::allreduce));
  EXPECT_FALSE(s.names(PointToPointCall::gather));
}

TEST(NcclInitAll, EveryRankOnOneGpuIsVirtualRanksOfIt) {
  const canopy::CommunicatorOptions shared = options_for_devices({0, 0, 0});
  EXPECT_EQ(shared.devices, std::vector<int>{0});
  ASSERT_TRUE(shared.topology.has_value()) << "planned as processes sharing a GPU are";
  EXPECT_EQ(shared.topology->gpu_ids().size(), 3u);
  const canopy::CommunicatorOptions distinct = options_for_devices({1, 0});
  EXPECT_EQ(distinct.devices, (std::vector<int>{1, 0}));
  EXPECT_FALSE(distinct.topology.has_value()) << "detected, as before";
  EXPECT_EQ(options_for_devices({2}).devices, std::vector<int>{2});
  EXPECT_EQ(options_for_devices({0, 0, 1}).devices, (std::vector<int>{0, 0, 1})) << "refused by create, naming it";
}

TEST(NcclForwardList, RealMode) {
  RealMode m = RealMode::off;
  ASSERT_TRUE(parse_real_mode("", &m).ok());
  EXPECT_EQ(m, RealMode::automatic);
  ASSERT_TRUE(parse_real_mode("0", &m).ok());
  EXPECT_EQ(m, RealMode::off);
  ASSERT_TRUE(parse_real_mode("YES", &m).ok());
  EXPECT_EQ(m, RealMode::required);
  const canopy::Status bad = parse_real_mode("maybe", &m);
  EXPECT_NE(bad.message().find("CANOPY_NCCL_REAL='maybe'"), std::string::npos) << bad.message();
}

TEST(NcclConfig, ReadsOnlyWhatTheCallerPassed) {
  ncclConfig_t out;
  ASSERT_EQ(read_config(nullptr, "f", &out), ncclSuccess);
  EXPECT_EQ(out.blocking, NCCL_CONFIG_UNDEF_INT);
  EXPECT_FALSE(non_blocking(out));
  ncclConfig_t in = NCCL_CONFIG_INITIALIZER;
  in.blocking = 0;
  in.cgaClusterSize = 4;
  in.size = offsetof(ncclConfig_t, blocking) + sizeof(int);  // an older caller's struct ends after blocking
  ASSERT_EQ(read_config(&in, "f", &out), ncclSuccess);
  EXPECT_TRUE(non_blocking(out));
  EXPECT_EQ(out.cgaClusterSize, NCCL_CONFIG_UNDEF_INT);  // beyond its size: the default
  EXPECT_EQ(out.size, sizeof(ncclConfig_t));
  in = NCCL_CONFIG_INITIALIZER;
  in.version = NCCL_VERSION(2, 13, 0);
  EXPECT_EQ(read_config(&in, "ncclCommInitRankConfig", &out), ncclInvalidArgument);
  in = NCCL_CONFIG_INITIALIZER;
  in.size = 4;
  EXPECT_EQ(read_config(&in, "ncclCommInitRankConfig", &out), ncclInvalidArgument);
}

// A rank's facts; by default its forward list names calls, so that something would use a real communicator.
RealCommFacts facts(const std::string& gpu, const std::string& host_id = "", bool loaded = true,
                    RealMode mode = RealMode::automatic,
                    const std::string& use = "CANOPY_NCCL_FORWARD names calls to pass to it") {
  RealCommFacts f;
  f.use = use;
  f.loaded = loaded;
  f.why_not = loaded ? "" : "no real NCCL found";
  f.gpu = gpu;
  f.host_id = host_id;
  f.mode = mode;
  return f;
}

TEST(NcclRealComm, MadeWhereEveryRankCanHaveOne) {
  EXPECT_TRUE(decide_real_comm({facts("aa"), facts("bb")}).make);
  const RealCommDecision shared = decide_real_comm({facts("aa"), facts("bb"), facts("aa")});
  EXPECT_FALSE(shared.make);
  EXPECT_FALSE(shared.fail_init);
  EXPECT_NE(shared.why_not.find("ranks 0 and 2 share GPU aa"), std::string::npos) << shared.why_not;
  EXPECT_NE(shared.why_not.find("NCCL_HOSTID"), std::string::npos);
  EXPECT_TRUE(decide_real_comm({facts("aa", "h0"), facts("aa", "h1")}).make);  // distinct NCCL_HOSTIDs
  EXPECT_FALSE(decide_real_comm({facts("aa", "h0"), facts("aa", "h0")}).make);
  const RealCommDecision missing = decide_real_comm({facts("aa"), facts("bb", "", false)});
  EXPECT_NE(missing.why_not.find("rank 1 found no real NCCL: no real NCCL found"), std::string::npos);
  const RealCommDecision off = decide_real_comm({facts("aa"), facts("bb", "", true, RealMode::off)});
  EXPECT_FALSE(off.make);
  EXPECT_NE(off.why_not.find("CANOPY_NCCL_REAL=0 on rank 1"), std::string::npos);
  const RealCommDecision required = decide_real_comm({facts("aa", "", true, RealMode::required), facts("aa")});
  EXPECT_FALSE(required.make);
  EXPECT_TRUE(required.fail_init);
}

// Made only where something will use it: a forward list, point-to-point Canopy does not serve (several hosts), or
// CANOPY_NCCL_REAL=1; elsewhere its init time and memory are spared, saying why.
TEST(NcclRealComm, MadeOnlyWhereSomethingWillUseIt) {
  const RealCommDecision unused = decide_real_comm({facts("aa", "", true, RealMode::automatic, ""),
                                                    facts("bb", "", true, RealMode::automatic, "")});
  EXPECT_FALSE(unused.make);
  EXPECT_FALSE(unused.fail_init);
  EXPECT_EQ(unused.why_not, kNothingUsesIt);
  EXPECT_NE(unused.why_not.find("CANOPY_NCCL_REAL=1 makes one anyway"), std::string::npos);
  // One rank's use is enough: every rank takes the same decision.
  EXPECT_TRUE(decide_real_comm({facts("aa", "", true, RealMode::automatic, ""),
                                facts("bb", "", true, RealMode::automatic,
                                      "point-to-point: send_recv (0 ops): point-to-point on a communicator of several "
                                      "hosts is not served yet")})
                  .make);
  EXPECT_TRUE(decide_real_comm({facts("aa", "", true, RealMode::required, ""),
                                facts("bb", "", true, RealMode::automatic, "")})
                  .make);
}

// tuning.json's library choices (`canopy tune --vs-nccl`) use a real communicator only where every rank holds the same
// choices: a rank with other choices (or none) leaves every rank on Canopy's kernels, with no real communicator made
// for them; the facts carry the choices' digest through the exchange.
TEST(NcclRealComm, LibraryChoicesApplyOnlyWhereEveryRankHoldsTheSame) {
  const auto tuned = [](const std::string& gpu, const std::string& digest) {
    RealCommFacts f = facts(gpu, "", true, RealMode::automatic, "");
    f.choices = digest;
    f.chosen = 3;
    return f;
  };
  const RealCommDecision same = decide_real_comm({tuned("aa", "d1"), tuned("bb", "d1")});
  EXPECT_TRUE(same.choices_agree);
  EXPECT_TRUE(same.make);
  const RealCommDecision differ = decide_real_comm({tuned("aa", "d1"), tuned("bb", "d2")});
  EXPECT_FALSE(differ.choices_agree);
  EXPECT_FALSE(differ.make) << "nothing else would use it";
  EXPECT_EQ(differ.why_not, kNothingUsesIt);
  RealCommFacts untuned = facts("bb", "", true, RealMode::automatic, "");
  EXPECT_FALSE(decide_real_comm({tuned("aa", "d1"), untuned}).choices_agree);
  // Another use still makes one; the choices still do not apply.
  const RealCommDecision forwarded = decide_real_comm({tuned("aa", "d1"), facts("bb")});
  EXPECT_TRUE(forwarded.make);
  EXPECT_FALSE(forwarded.choices_agree);
  RealCommFacts back;
  ASSERT_TRUE(decode_real_facts(encode_real_facts(tuned("aa", "d1")), &back).ok());
  EXPECT_EQ(back.choices, "d1");
  EXPECT_EQ(back.chosen, 3);
}

TEST(NcclRealComm, FactsRoundTrip) {
  const RealCommFacts f = facts("0123abcd", "host 7", false, RealMode::required);
  RealCommFacts back;
  ASSERT_TRUE(decode_real_facts(encode_real_facts(f), &back).ok());
  EXPECT_EQ(back.loaded, f.loaded);
  EXPECT_EQ(back.gpu, f.gpu);
  EXPECT_EQ(back.host_id, f.host_id);
  EXPECT_EQ(back.mode, f.mode);
  EXPECT_EQ(back.why_not, f.why_not);
  EXPECT_EQ(back.use, f.use);
  EXPECT_FALSE(decode_real_facts("garbage", &back).ok());
}

TEST(NcclPreMulOps, CreateDestroyReuse) {
  PreMulOps ops;
  const float half = 0.5f;
  ncclRedOp_t a{}, b{}, c{};
  ASSERT_EQ(ops.create(&a, &half, ncclFloat32, ncclScalarHostImmediate, 4, "x"), ncclSuccess);
  EXPECT_EQ(static_cast<int>(a), ncclNumOps);
  const double* device_scalar = reinterpret_cast<const double*>(0x1000);
  ASSERT_EQ(ops.create(&b, device_scalar, ncclFloat64, ncclScalarDevice, 8, "x"), ncclSuccess);
  EXPECT_EQ(static_cast<int>(b), ncclNumOps + 1);
  const auto found = ops.find(a);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->datatype, ncclFloat32);
  float back = 0;
  std::memcpy(&back, &found->scalar.host, sizeof back);
  EXPECT_EQ(back, 0.5f);  // copied at creation
  EXPECT_EQ(found->scalar.device, nullptr);
  EXPECT_EQ(ops.find(b)->scalar.device, device_scalar);
  EXPECT_EQ(ops.destroy(a, "x"), ncclSuccess);
  EXPECT_FALSE(ops.find(a));
  EXPECT_EQ(ops.destroy(a, "x"), ncclInvalidArgument);
  EXPECT_EQ(ops.destroy(ncclSum, "x"), ncclInvalidArgument);
  ASSERT_EQ(ops.create(&c, &half, ncclFloat32, ncclScalarHostImmediate, 4, "x"), ncclSuccess);
  EXPECT_EQ(c, a);  // the freed value is reused
  EXPECT_EQ(ops.live(), 2);
  EXPECT_EQ(ops.create(&c, nullptr, ncclFloat32, ncclScalarHostImmediate, 4, "x"), ncclInvalidArgument);
  EXPECT_EQ(ops.create(&c, &half, ncclFloat32, static_cast<ncclScalarResidence_t>(7), 4, "x"), ncclInvalidArgument);
  EXPECT_EQ(ops.create(nullptr, &half, ncclFloat32, ncclScalarHostImmediate, 4, "x"), ncclInvalidArgument);
}

}  // namespace
