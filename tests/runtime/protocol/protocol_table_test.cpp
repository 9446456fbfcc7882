// ProtocolTable: which protocol a call takes (LL, LL128, direct, planned; two-shot; copy engines) and which protocols
// a communicator turns off, from settings and facts alone (no GPU).
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "runtime/protocol/protocol_table.hpp"

namespace canopy {
namespace {

constexpr std::int64_t KiB = 1024, MiB = 1024 * 1024;

ProtocolSettings two_gpu_settings() {
  ProtocolSettings s;
  s.low_latency = {256 * KiB, 32, 512};
  s.ll128 = {2 * MiB, 64, 512};
  s.direct = {32 * MiB, 32, 512};
  s.ll128_given = true;
  s.engine.min_bytes = 0;  // off unless a test turns it on
  return s;
}

ProtocolFacts facts(int ranks, int devices) {
  ProtocolFacts f;
  f.ranks = ranks;
  f.devices = devices;
  f.min_sms = 132;
  return f;
}

struct Made {
  ProtocolTable table;
  std::vector<std::string> log;
};

Made make(const ProtocolSettings& s, const ProtocolFacts& f,
          std::function<std::optional<ProtocolLimits>(Collective)> tuned = nullptr) {
  Made m;
  Logger log(LogLevel::info, ~0u);
  log.set_sink([&m](std::string_view line) { m.log.emplace_back(line); });
  m.table = make_protocol_table(s, f, tuned, log);
  return m;
}

bool made_logged(const Made& m, const std::string& text) {
  for (const std::string& line : m.log)
    if (line.find(text) != std::string::npos) return true;
  return false;
}

TEST(ProtocolTable, TriesLowLatencyThenLL128ThenDirectThenPlanned) {
  const Made m = make(two_gpu_settings(), facts(2, 2));
  EXPECT_EQ(m.table.choose(Collective::allreduce, 8).protocol, Protocol::low_latency);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 256 * KiB).protocol, Protocol::low_latency);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 256 * KiB + 4).protocol, Protocol::ll128);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 2 * MiB).protocol, Protocol::ll128);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 4 * MiB).protocol, Protocol::direct);
  // Direct goes by the bytes the busiest link carries: (ranks - 1) x S for a one-shot allreduce of two ranks.
  EXPECT_EQ(m.table.choose(Collective::allreduce, 32 * MiB).protocol, Protocol::direct);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 64 * MiB).protocol, Protocol::planned);
}

TEST(ProtocolTable, OneRankTakesNoOneHopProtocolBeyondLowLatency) {
  const Made m = make(two_gpu_settings(), facts(1, 1));
  EXPECT_EQ(m.table.choose(Collective::allreduce, 1 * MiB).protocol, Protocol::planned);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 4 * MiB).protocol, Protocol::planned);
}

TEST(ProtocolTable, MissingPeerAccessTurnsEveryOneHopProtocolOffAndSaysWhy) {
  ProtocolFacts f = facts(2, 2);
  f.no_peer_access = "GPUs 0 and 1 have no peer access";
  f.no_nvlink_hop = f.no_peer_access;
  const Made m = make(two_gpu_settings(), f);
  EXPECT_EQ(m.table.low_latency().max_bytes, 0);
  EXPECT_EQ(m.table.ll128().max_bytes, 0);
  EXPECT_EQ(m.table.direct().max_bytes, 0);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 8).protocol, Protocol::planned);
  EXPECT_TRUE(made_logged(m, "low-latency protocol off: GPUs 0 and 1 have no peer access"));
  EXPECT_TRUE(made_logged(m, "direct protocol off: GPUs 0 and 1 have no peer access"));
}

TEST(ProtocolTable, NoNVLinkHopKeepsLowLatencyButNotLL128OrDirect) {
  ProtocolFacts f = facts(2, 2);
  f.no_nvlink_hop = "gpu0 and gpu1 are not one NVLink hop apart";
  const Made m = make(two_gpu_settings(), f);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 8).protocol, Protocol::low_latency);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 1 * MiB).protocol, Protocol::planned);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 8 * MiB).protocol, Protocol::planned);
  EXPECT_TRUE(made_logged(m, "LL128 protocol off"));
}

TEST(ProtocolTable, LineBuffersOverTheCeilingTurnTheProtocolOff) {
  ProtocolSettings s = two_gpu_settings();
  s.low_latency.max_bytes = 512 * MiB;  // a slot per rank, two parities: far over 1 GiB per GPU at 64 ranks
  const Made m = make(s, facts(64, 1));
  EXPECT_EQ(m.table.low_latency().max_bytes, 0);
  EXPECT_TRUE(made_logged(m, "lower CANOPY_LL_BYTES to use it"));
}

TEST(ProtocolTable, BlocksAreFittedToOnePerSmForEveryRankOfAGpu) {
  const Made m = make(two_gpu_settings(), facts(8, 1));  // 8 ranks on one GPU of 132 SMs: at most 16 blocks each
  EXPECT_EQ(m.table.low_latency().blocks_per_rank, 16);
  EXPECT_EQ(m.table.ll128().blocks_per_rank, 16);
  EXPECT_EQ(m.table.direct().blocks_per_rank, 16);
}

TEST(ProtocolTable, LL128WithinLowLatencysLimitTakesNothing) {
  ProtocolSettings s = two_gpu_settings();
  s.ll128.max_bytes = 128 * KiB;
  const Made m = make(s, facts(2, 2));
  EXPECT_EQ(m.table.ll128().max_bytes, 0);
  EXPECT_TRUE(made_logged(m, "LL128 protocol off: its limit 128 KiB is within the one below it (256 KiB)"));
}

TEST(ProtocolTable, TunedLimitsStandInPerCollectiveWhenAllowed) {
  ProtocolSettings s = two_gpu_settings();
  s.tuned_from = "/cache/tuning.json";
  const auto tuned = [](Collective c) -> std::optional<ProtocolLimits> {
    if (c != Collective::allgather) return std::nullopt;
    return ProtocolLimits{64 * KiB, 0, 1 * MiB};
  };
  const Made m = make(s, facts(2, 2), tuned);
  EXPECT_EQ(m.table.choose(Collective::allgather, 128 * KiB).protocol, Protocol::direct);
  EXPECT_EQ(m.table.choose(Collective::allgather, 2 * MiB).protocol, Protocol::planned);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 128 * KiB).protocol, Protocol::low_latency);  // untuned
  EXPECT_TRUE(made_logged(m, "protocol limits tuned for this machine (/cache/tuning.json): allgather:"));
  s.use_tuned = false;
  EXPECT_EQ(make(s, facts(2, 2), tuned).table.choose(Collective::allgather, 128 * KiB).protocol,
            Protocol::low_latency);
}

// Processes on GPUs of their own (the inbox kernels on own buffers): a limit per collective on the bytes the busiest
// link carries, never above direct.max_bytes; the trees take over beyond it.
TEST(ProtocolTable, PerCollectiveMovedLimitsStandInForTheOneLimit) {
  ProtocolSettings s = two_gpu_settings();
  use_inbox_limits(&s, 2);
  const Made m = make(s, facts(2, 2));
  EXPECT_EQ(m.table.choose(Collective::broadcast, 32 * MiB).protocol, Protocol::direct);
  EXPECT_EQ(m.table.choose(Collective::broadcast, 64 * MiB).protocol, Protocol::planned);
  EXPECT_EQ(m.table.choose(Collective::reduce, 32 * MiB).protocol, Protocol::direct);
  EXPECT_EQ(m.table.choose(Collective::reduce, 64 * MiB).protocol, Protocol::planned);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 16 * MiB).protocol, Protocol::direct);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 32 * MiB).protocol, Protocol::planned);
  // Allgather's S is its output: each of two ranks carries half of it.
  EXPECT_EQ(m.table.choose(Collective::allgather, 32 * MiB).protocol, Protocol::direct);
  EXPECT_EQ(m.table.choose(Collective::allgather, 64 * MiB).protocol, Protocol::planned);
  EXPECT_TRUE(made_logged(m, "direct protocol on own buffers across GPUs, up to what a link carries: broadcast 32 MiB, "
                        "reduce 32 MiB, allreduce 16 MiB"));
  s.direct.max_bytes = 2 * MiB;  // the one limit stays the ceiling
  EXPECT_EQ(make(s, facts(2, 2)).table.choose(Collective::allreduce, 4 * MiB).protocol, Protocol::planned);
}

// From three ranks the inbox kernels take larger allreduces, allgathers and reduce-scatters (the two-shot allreduce and
// the one-shot allgather beat the trees there on four H200), and the one limit lets them through (use_inbox_limits
// raises it to the largest). Two ranks keep the limits measured on two H200.
TEST(ProtocolTable, InboxLimitsFromThreeRanksTakeLargerCalls) {
  EXPECT_EQ(direct_own_buffers_default_bytes(Collective::allreduce, 2), 16 * MiB);
  EXPECT_EQ(direct_own_buffers_default_bytes(Collective::allgather, 2), 16 * MiB);
  EXPECT_EQ(direct_own_buffers_default_bytes(Collective::broadcast, 2), 32 * MiB);
  ProtocolSettings s = two_gpu_settings();
  s.direct_inbox = true;
  use_inbox_limits(&s, 4);
  EXPECT_EQ(s.direct.max_bytes, 96 * MiB);  // raised to the largest limit
  const Made m = make(s, facts(4, 4));
  const ProtocolPick allreduce = m.table.choose(Collective::allreduce, 64 * MiB);  // two-shot: 96 MiB on a link
  EXPECT_EQ(allreduce.protocol, Protocol::direct);
  EXPECT_TRUE(allreduce.two_shot);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 128 * MiB).protocol, Protocol::planned);
  EXPECT_EQ(m.table.choose(Collective::allgather, 64 * MiB).protocol, Protocol::direct);  // 48 MiB
  EXPECT_EQ(m.table.choose(Collective::reducescatter, 128 * MiB).protocol, Protocol::planned);
  EXPECT_EQ(m.table.choose(Collective::broadcast, 16 * MiB).protocol, Protocol::direct);  // two-shot: 24 MiB
  EXPECT_EQ(m.table.choose(Collective::broadcast, 32 * MiB).protocol, Protocol::planned);
}

// Unset, LL128's limit is per collective: on four processes each on a GPU of its own (the inbox kernels) it takes
// allreduces to 512 KiB, broadcasts to 1 MiB and the others to 2 MiB; in one process on four GPUs, none.
TEST(ProtocolTable, LL128ByDefaultOnThreeOrFourProcessesOnGpusOfTheirOwn) {
  ProtocolSettings s = two_gpu_settings();
  s.ll128_given = false;
  s.ll128.max_bytes = 0;
  s.direct_inbox = s.inbox_on_own_gpus = true;
  const Made m = make(s, facts(4, 4));
  EXPECT_EQ(m.table.choose(Collective::allreduce, 512 * KiB).protocol, Protocol::ll128);
  EXPECT_EQ(m.table.choose(Collective::allreduce, 1 * MiB).protocol, Protocol::direct);
  EXPECT_EQ(m.table.choose(Collective::broadcast, 1 * MiB).protocol, Protocol::ll128);
  EXPECT_EQ(m.table.choose(Collective::broadcast, 2 * MiB).protocol, Protocol::direct);
  for (Collective c : {Collective::reduce, Collective::allgather, Collective::reducescatter}) {
    EXPECT_EQ(m.table.choose(c, 2 * MiB).protocol, Protocol::ll128) << to_string(c);
    EXPECT_EQ(m.table.choose(c, 4 * MiB).protocol, Protocol::direct) << to_string(c);
  }
  s.inbox_on_own_gpus = false;  // processes sharing GPUs, or one process
  EXPECT_EQ(make(s, facts(4, 4)).table.choose(Collective::reduce, 1 * MiB).protocol, Protocol::direct);
}

// The inbox kernels' defaults across GPUs: more blocks than elsewhere, and pieces for the collectives whose receiver
// only copies or combines (broadcast, reduce); the table hands each collective its pieces.
TEST(ProtocolTable, InboxKernelsAcrossGpusTakeTheirBlocksAndPieces) {
  EXPECT_EQ(direct_own_buffers_default_blocks(), 64);
  EXPECT_EQ(direct_own_buffers_default_piece_bytes(Collective::broadcast), 64 * KiB);
  EXPECT_EQ(direct_own_buffers_default_piece_bytes(Collective::reduce), 64 * KiB);
  for (Collective c : {Collective::allreduce, Collective::allgather, Collective::reducescatter})
    EXPECT_EQ(direct_own_buffers_default_piece_bytes(c), 0) << to_string(c);
  ProtocolSettings s = two_gpu_settings();
  for (std::size_t c = 0; c < kCollectives; ++c)
    s.inbox_piece_bytes[c] = direct_own_buffers_default_piece_bytes(static_cast<Collective>(c));
  const Made m = make(s, facts(2, 2));
  EXPECT_EQ(m.table.inbox_piece_bytes(Collective::broadcast), 64 * KiB);
  EXPECT_EQ(m.table.inbox_piece_bytes(Collective::allreduce), 0);
}

TEST(ProtocolTable, TwoShotVariants) {
  ProtocolSettings s = two_gpu_settings();
  s.ll_two_shot_bytes = 64 * KiB;
  s.direct_two_shot_bytes = 8 * MiB;
  const Made m = make(s, facts(4, 4));
  EXPECT_FALSE(m.table.choose(Collective::allreduce, 32 * KiB).two_shot);
  EXPECT_TRUE(m.table.choose(Collective::allreduce, 64 * KiB).two_shot);
  EXPECT_FALSE(m.table.choose(Collective::allgather, 64 * KiB).two_shot);  // LL two-shot is an allreduce's
  const ProtocolPick out_of_place = m.table.choose(Collective::allreduce, 4 * MiB);
  EXPECT_EQ(out_of_place.protocol, Protocol::direct);
  EXPECT_FALSE(out_of_place.two_shot);
  EXPECT_TRUE(m.table.choose(Collective::allreduce, 4 * MiB, /*in_place=*/true).two_shot);
}

// Processes on their own buffers run the inbox kernels, two-shot from the limit given or their own default (2 MiB from
// three ranks), and the direct limit counts the bytes of the kernel that runs (four H200: a 16 MiB broadcast of four
// processes once took the one-shot inbox kernel, 161 us, where the trees took 105, as two-shot's bytes were counted
// for it). In place they read no other rank's buffer, so an allreduce needs no two-shot there.
TEST(ProtocolTable, InboxKernelsRunTwoShotFromTheLimitAndAreCountedSo) {
  ProtocolSettings s = two_gpu_settings();
  s.direct_two_shot_bytes = 1 * MiB;
  use_inbox_limits(&s, 2);
  const Made two_shot = make(s, facts(4, 4));
  EXPECT_TRUE(two_shot.table.choose(Collective::broadcast, 16 * MiB).two_shot);
  EXPECT_EQ(two_shot.table.choose(Collective::broadcast, 16 * MiB).protocol, Protocol::direct);  // 24 MiB moved
  s.direct_inbox = true;
  const Made inbox = make(s, facts(4, 4));
  EXPECT_EQ(direct_inbox_two_shot_default_bytes(Collective::allreduce, 4), 2 * MiB);
  EXPECT_EQ(direct_inbox_two_shot_default_bytes(Collective::broadcast, 2), 0);
  EXPECT_EQ(direct_inbox_two_shot_default_bytes(Collective::allgather, 4), 0);
  EXPECT_TRUE(inbox.table.direct_two_shot(Collective::broadcast, 16 * MiB, false));
  EXPECT_EQ(inbox.table.choose(Collective::broadcast, 16 * MiB).protocol, Protocol::direct);  // two-shot: 24 MiB
  // In place, the inbox kernels read no other rank's buffer: an allreduce under the two-shot limit stays one-shot.
  EXPECT_FALSE(inbox.table.direct_two_shot(Collective::allreduce, 512 * KiB, /*in_place=*/true));
  EXPECT_TRUE(inbox.table.direct_two_shot(Collective::allreduce, 4 * MiB, /*in_place=*/true));
  EXPECT_TRUE(two_shot.table.direct_two_shot(Collective::allreduce, 512 * KiB, /*in_place=*/true));
  s.direct_two_shot_bytes = 0;  // never: one-shot's bytes are counted
  const Made one_shot = make(s, facts(4, 4));
  const ProtocolPick eight = one_shot.table.choose(Collective::broadcast, 8 * MiB);  // 24 MiB on the root's link
  EXPECT_EQ(eight.protocol, Protocol::direct);
  EXPECT_FALSE(eight.two_shot);
  EXPECT_EQ(one_shot.table.choose(Collective::broadcast, 16 * MiB).protocol, Protocol::planned);  // 48 MiB
  s.direct_two_shot_bytes.reset();  // the inbox kernels' default, not the single-process kernels' (1 MiB here)
  const Made by_default = make(s, facts(4, 4));
  EXPECT_FALSE(by_default.table.direct_two_shot(Collective::reduce, 1 * MiB, false));
  EXPECT_TRUE(by_default.table.direct_two_shot(Collective::reduce, 2 * MiB, false));
  EXPECT_FALSE(make(s, facts(2, 2)).table.direct_two_shot(Collective::allreduce, 64 * MiB, true));
}

TEST(ProtocolTable, CopyEnginesNeedTwoRanksOnTwoGpusAndTakeLargeCallsFromDirect) {
  ProtocolSettings s = two_gpu_settings();
  s.engine.min_bytes = 16 * MiB;
  const Made two = make(s, facts(2, 2));
  const ProtocolPick large = two.table.choose(Collective::broadcast, 16 * MiB);
  EXPECT_TRUE(large.copy_engine);
  EXPECT_EQ(large.protocol, Protocol::planned);
  EXPECT_FALSE(two.table.choose(Collective::allgather, 64 * MiB).copy_engine);  // not a collective they move
  const Made four = make(s, facts(4, 4));
  EXPECT_FALSE(four.table.choose(Collective::broadcast, 64 * MiB).copy_engine);
  EXPECT_TRUE(made_logged(four, "copy engines off: 4 ranks on 4 GPUs"));
}

}  // namespace
}  // namespace canopy
