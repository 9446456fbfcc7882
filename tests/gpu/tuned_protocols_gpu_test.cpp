// Protocol limits tuned for a machine (`canopy tune --protocols`, tuning.json) on a real GPU (label gpu; SKIPPED
// without one): a Communicator of that machine gives each size the protocol the limits name and its calls are right;
// another machine's limits, an explicit limit and tuned_protocols = false leave the untuned choice; and the command
// itself measures, chooses against the untuned choice its environment gives, checks and writes limits that a new
// Communicator then follows. h200x2's two ranks, on
// two GPUs where the machine has them, else both on GPU 0.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/protocol/protocol_choice.hpp"
#include "runtime/tune/tuning_file.hpp"
#include "tests/gpu/checked_call.hpp"
#include "tests/gpu/two_rank_communicator.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

constexpr std::uint64_t K = 1024, M = 1024 * 1024;

// A kernel cache directory of its own, removed at the end.
class TunedProtocolsOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    gpus_ = visible_gpu_count();
    if (gpus_ == 0) GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
    cache_ = std::filesystem::temp_directory_path() /
             fmt::format("canopy-tuned-protocols-{}-{}", ::getpid(),
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(cache_);
    std::filesystem::create_directories(cache_);
  }
  void TearDown() override {
    if (!cache_.empty()) std::filesystem::remove_all(cache_);
  }
  std::unique_ptr<Communicator> communicator(CommunicatorOptions o = {}) {
    o.cache_dir = cache_;
    std::unique_ptr<Communicator> comm;
    const Status s = two_rank_communicator(gpus_, &comm, o);
    EXPECT_TRUE(s.ok()) << s.message();
    return comm;
  }
  int gpus_ = 0;
  std::filesystem::path cache_;
};

// What `comm` gives an out-of-place call of size S `bytes` (f32).
Protocol protocol_of(const Communicator& comm, Collective c, std::uint64_t bytes) {
  return comm.protocol(c, bytes / 4 / (c == Collective::allgather || c == Collective::reducescatter ? 2 : 1),
                       DataType::f32);
}

TEST_F(TunedProtocolsOnGpu, ACommunicatorTakesTheLimitsTunedForItsMachine) {
  const std::unique_ptr<Communicator> untuned = communicator();
  ASSERT_TRUE(untuned);
  // The untuned choice, as the defaults give it: LL to 256 KiB, then direct.
  EXPECT_EQ(protocol_of(*untuned, Collective::allreduce, 128 * K), Protocol::low_latency);
  EXPECT_EQ(protocol_of(*untuned, Collective::allreduce, 2 * M), Protocol::direct);
  EXPECT_EQ(protocol_of(*untuned, Collective::broadcast, 8), Protocol::low_latency);
  {
    TuningFile file(untuned->tuning_path());
    file.set(ProtocolKey{untuned->machine_key(), Collective::allreduce},
             {"h200x2", DataType::f32, {64 * K, 1 * M, 4 * M}, 4.0, 4.5});
    file.set(ProtocolKey{untuned->machine_key(), Collective::broadcast},
             {"h200x2", DataType::f32, {0, 0, 0}, 3.0, 3.5});
    file.set(ProtocolKey{"another machine", Collective::reduce}, {"h200x2", DataType::f32, {0, 0, 0}, 3.0, 3.5});
    file.save();
  }
  std::vector<std::string> log;
  CommunicatorOptions o;
  o.log_sink = [&](std::string_view line) { log.emplace_back(line); };
  setenv("CANOPY_LOG", "info", 1);  // this test's process alone (ctest runs each test in its own)
  const std::unique_ptr<Communicator> tuned = communicator(o);
  unsetenv("CANOPY_LOG");
  ASSERT_TRUE(tuned);
  const struct {
    Collective c;
    std::uint64_t bytes;
    Protocol expected;
  } kSizes[] = {
      {Collective::allreduce, 8, Protocol::low_latency},
      {Collective::allreduce, 64 * K, Protocol::low_latency},
      {Collective::allreduce, 128 * K, Protocol::ll128},
      {Collective::allreduce, 1 * M, Protocol::ll128},
      {Collective::allreduce, 2 * M, Protocol::direct},
      {Collective::allreduce, 4 * M, Protocol::direct},
      {Collective::allreduce, 8 * M, Protocol::planned},
      {Collective::broadcast, 8, Protocol::planned},
      {Collective::broadcast, 1 * M, Protocol::planned},
      {Collective::reduce, 8, Protocol::low_latency},
      // Reduce has only another machine's entry: the untuned choice (direct; LL128 by default on two GPUs).
      {Collective::reduce, 1 * M, protocol_of(*untuned, Collective::reduce, 1 * M)},
      {Collective::allgather, 128 * K, Protocol::low_latency},
  };
  CheckedCallSetup setup;
  ASSERT_TRUE(setup.make(*tuned, 8 * M));
  for (const auto& s : kSizes) {
    EXPECT_EQ(protocol_of(*tuned, s.c, s.bytes), s.expected)
        << to_string(s.c) << " " << s.bytes << ": " << to_string(protocol_of(*tuned, s.c, s.bytes));
    const std::uint64_t count = s.bytes / 4 / (s.c == Collective::allgather ? 2 : 1);
    const CheckSpec spec{s.c, DataType::f32, ReduceOp::sum, 0, tuned->ranks(), count, 0x5eedu + s.bytes};
    EXPECT_TRUE(run_checked_call(*tuned, setup.buffers(), spec, false, nullptr)) << to_string(s.c) << " " << s.bytes;
  }
  bool logged = false;
  for (const std::string& line : log)
    logged = logged || line.find("protocol limits tuned for this machine") != std::string::npos;
  EXPECT_TRUE(logged) << "no log line names the tuned limits";

  // Limits given in the options, or tuned_protocols = false: the tuned ones are left aside.
  CommunicatorOptions given;
  given.direct_bytes = 32 * M;
  const std::unique_ptr<Communicator> explicit_limit = communicator(given);
  ASSERT_TRUE(explicit_limit);
  EXPECT_EQ(protocol_of(*explicit_limit, Collective::allreduce, 128 * K), Protocol::low_latency);
  EXPECT_EQ(protocol_of(*explicit_limit, Collective::broadcast, 8), Protocol::low_latency);
  CommunicatorOptions off;
  off.tuned_protocols = false;
  const std::unique_ptr<Communicator> untuned_again = communicator(off);
  ASSERT_TRUE(untuned_again);
  EXPECT_EQ(protocol_of(*untuned_again, Collective::allreduce, 128 * K), Protocol::low_latency);
  EXPECT_EQ(protocol_of(*untuned_again, Collective::allreduce, 8 * M), Protocol::direct);
}

TEST_F(TunedProtocolsOnGpu, TheTuneCommandWritesLimitsThatANewCommunicatorFollows) {
  // The command's untuned choice is what the environment gives: with LL and direct off there, every size up to
  // 16 MiB runs the planned trees, which the one-launch kernels beat by far at 4 KiB on any GPU (a launch against
  // a handshake per tree edge), so the command must move the limits. Communicators made without those variables then
  // follow what it wrote.
  const std::string devices = gpus_ >= 2 ? "0,1" : "0";
  const testing::CommandRun r = testing::run_command(
      fmt::format("CANOPY_LL_BYTES=0 CANOPY_DIRECT_BYTES=0 CANOPY_CACHE_DIR={} {} tune --protocols -t h200x2 "
                  "--devices {} -c allreduce,broadcast --sizes 4K:16M:4 --warmup 1 --iters 5 --repeats 3 2>&1",
                  cache_.string(), CANOPY_CLI, devices));
  ASSERT_EQ(r.status, 0) << r.output;
  std::cout << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("LL128"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("# wrote"));
  std::string warning;
  const TuningFile file(TuningFile::default_path(cache_), &warning);
  EXPECT_EQ(warning, "");
  const std::unique_ptr<Communicator> comm = communicator();
  ASSERT_TRUE(comm);
  for (Collective c : {Collective::allreduce, Collective::broadcast}) {
    EXPECT_THAT(r.output, ::testing::HasSubstr(to_string(c) + ": chose "));
    const std::optional<ProtocolEntry> e = file.find(ProtocolKey{comm->machine_key(), c});
    ASSERT_TRUE(e) << to_string(c);
    EXPECT_LT(e->cost, e->untuned_cost);
    // Which one-launch protocol takes 4 KiB is the machine's to say (on one GPU all three are within a few us).
    EXPECT_NE(protocol_at(e->limits, 4 * K), Protocol::planned) << to_string(c) << ": " << describe(e->limits);
    for (std::uint64_t bytes = 4 * K; bytes <= 16 * M; bytes *= 4)
      EXPECT_EQ(protocol_of(*comm, c, bytes), protocol_at(e->limits, bytes)) << to_string(c) << " " << bytes;
    std::cout << fmt::format("[ tuned ] {} on {} GPU(s): {}\n", to_string(c), comm->devices(), describe(e->limits));
  }
}

}  // namespace
}  // namespace canopy
