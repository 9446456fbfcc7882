// Blink+'s relays running (label gpu; SKIPPED without one): a tenant's allocation of a DGX-1 (dgx1-v100 and dgx1-p100:
// {0,1}, {0,3}, {0,1,2}, {0,1,4,5}, {0,1,2,3,5}) with every other GPU of the machine as a relay
// (CommunicatorOptions::relays), as virtual GPUs on GPU 0: ranks and relays' forwarding in one launch. Every collective
// at f32, bf16 and i32 and 1, 1028, 65540, 3,000,004 and 40,000,004 elements, in and out of place, with the planned
// trees forced (the protocols without a plan off: every call crosses the relays where the plan does), then with each
// plan-free protocol forced at the counts it reaches; every element of every rank checked. Each kernel's relay rings
// and each relay GPU's area are read back and held to the cap (relay_memory), and a small cap is fitted and kept.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "planner/plan_eval.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "tests/gpu/checked_sweep.hpp"
#include "tests/gpu/topology_collective_param.hpp"
#include "topology/shipped_topologies.hpp"

namespace canopy {
namespace {

struct RelayCase {
  const char* name;
  const char* topology;
  std::vector<std::string> gpus;
};
const RelayCase kCases[] = {
    {"v100_01", "dgx1-v100", {"0", "1"}},           {"v100_03", "dgx1-v100", {"0", "3"}},
    {"v100_012", "dgx1-v100", {"0", "1", "2"}},     {"v100_0145", "dgx1-v100", {"0", "1", "4", "5"}},
    {"v100_01235", "dgx1-v100", {"0", "1", "2", "3", "5"}}, {"p100_01", "dgx1-p100", {"0", "1"}},
    {"p100_03", "dgx1-p100", {"0", "3"}},           {"p100_012", "dgx1-p100", {"0", "1", "2"}},
    {"p100_0145", "dgx1-p100", {"0", "1", "4", "5"}},
    {"p100_01235", "dgx1-p100", {"0", "1", "2", "3", "5"}},
};

// The machine's GPUs that are not the tenant's.
std::vector<std::string> other_gpus(const Topology& t, const std::vector<std::string>& ranks) {
  std::vector<std::string> out;
  for (int g = 0; g < t.gpu_count(); ++g)
    if (std::find(ranks.begin(), ranks.end(), std::to_string(g)) == ranks.end()) out.push_back(std::to_string(g));
  return out;
}

enum class Forced { trees, low_latency, ll128, direct };

CommunicatorOptions relay_options(const RelayCase& tc, Forced forced) {
  CommunicatorOptions o;
  o.topology = load_topology(tc.topology);
  o.gpus = tc.gpus;
  o.relays = other_gpus(*o.topology, tc.gpus);
  o.devices = {0};
  o.engine_bytes = 0;  // the kernels, not the copy engines or the host path, move every byte
  o.hybrid_bytes = 0;
  o.low_latency_bytes = forced == Forced::low_latency ? std::int64_t{256} << 10 : 0;
  o.ll128_bytes = forced == Forced::ll128 ? std::int64_t{4} << 20 : 0;
  o.direct_bytes = forced == Forced::direct ? std::int64_t{32} << 20 : 0;
  return o;
}

constexpr DataType kTypes[] = {DataType::f32, DataType::bf16, DataType::i32};

std::vector<CollectiveSpec> relay_specs(Collective collective, int ranks) {
  std::vector<CollectiveSpec> specs;
  for (DataType t : kTypes) specs.push_back(CollectiveSpec{collective, t, ReduceOp::sum, ranks - 1});
  return specs;
}

// Bytes per rank each way for counts up to `largest` of the widest type here (4 bytes), a rank's share of every rank
// for allgather and reduce-scatter: up to 800 MB on five ranks, so that several cases fit one GPU at once.
std::uint64_t relay_buffer_bytes(Collective collective, int ranks, std::uint64_t largest) {
  const bool spans_ranks = collective == Collective::reducescatter || collective == Collective::allgather;
  return largest * 4 * (spans_ranks ? static_cast<std::uint64_t>(ranks) : 1);
}

using Param = testing::TopologyCollective;
class RelaysOnGpu : public ::testing::TestWithParam<Param> {};

TEST_P(RelaysOnGpu, EveryCallIsRightAndTheRingsStayUnderTheCap) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const RelayCase& tc = kCases[GetParam().topology];
  const Collective collective = GetParam().collective;
  const int ranks = static_cast<int>(tc.gpus.size());
  const std::vector<CollectiveSpec> specs = relay_specs(collective, ranks);
  const std::uint64_t largest = 40000004;
  const std::uint64_t all_counts[] = {1, 1028, 65540, 3000004, largest};
  const std::uint64_t small_counts[] = {1, 1028, 65540};

  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(relay_options(tc, Forced::trees), &comm);
  ASSERT_TRUE(created.ok()) << created.message();
  CheckedCallSetup setup;
  ASSERT_TRUE(setup.make(*comm, relay_buffer_bytes(collective, ranks, largest)));
  int planned = 0;
  const int runs = testing::check_every_call(
      *comm, setup.buffers(), specs, all_counts, std::string(tc.name) + " trees",
      [&](const CollectiveSpec& spec, std::uint64_t count) {
        return !comm->is_low_latency(collective, count, spec.dtype) && !comm->is_ll128(collective, count, spec.dtype) &&
               !comm->is_direct(collective, count, spec.dtype);
      },
      &planned);
  EXPECT_EQ(planned, 5 * static_cast<int>(specs.size()));  // every count on the planned trees

  // Every kernel the calls ran: which relays its plan crosses, its rings on each, each relay GPU's area; all within
  // the cap (64 MiB by default).
  const std::int64_t cap = std::int64_t{64} << 20;
  std::set<std::string> relayed;
  std::int64_t most_area = 0;
  for (const CollectiveSpec& base : specs)
    for (std::uint64_t count : all_counts) {
      const CollectiveSpec spec = comm->spec_of(collective, count, base.dtype, base.op, base.root);
      CollectiveInfo info;
      const Status s = comm->info(spec, &info);
      ASSERT_TRUE(s.ok()) << s.message();
      for (const std::string& g : relay_gpus_of(info.plan, comm->topology())) relayed.insert(g);
      ASSERT_EQ(info.relays.size(), other_gpus(comm->topology(), tc.gpus).size());
      for (std::size_t k = 0; k < info.relays.size(); ++k) {
        EXPECT_LE(info.relay_ring_bytes[k], info.relay_area_bytes[k]) << info.kernel << " on " << info.relays[k];
        EXPECT_LE(info.relay_area_bytes[k], cap) << info.relays[k];
        most_area = std::max(most_area, info.relay_area_bytes[k]);
      }
    }
  std::cout << fmt::format("[ runs ] {} {}: {} ranks on 1 GPU, relays {}, {} runs on the trees; relayed through {}; "
                           "largest relay area {} bytes (cap {})\n",
                           tc.name, to_string(collective), ranks, fmt::join(other_gpus(comm->topology(), tc.gpus), ","),
                           runs, relayed.empty() ? "none" : fmt::format("{}", fmt::join(relayed, ",")), most_area,
                           cap);

  // The plan-free protocols beside relays (they go rank to rank; a count past a protocol's reach takes the trees).
  for (Forced forced : {Forced::low_latency, Forced::ll128, Forced::direct}) {
    const char* name = forced == Forced::low_latency ? "low-latency" : forced == Forced::ll128 ? "LL128" : "direct";
    std::unique_ptr<Communicator> other;
    const Status made = Communicator::create(relay_options(tc, forced), &other);
    ASSERT_TRUE(made.ok()) << name << ": " << made.message();
    int taken = 0;
    testing::check_every_call(
        *other, setup.buffers(), specs, small_counts, std::string(tc.name) + " " + name,
        [&](const CollectiveSpec& spec, std::uint64_t count) {
          return forced == Forced::low_latency ? other->is_low_latency(collective, count, spec.dtype)
                 : forced == Forced::ll128     ? other->is_ll128(collective, count, spec.dtype)
                                               : other->is_direct(collective, count, spec.dtype);
        },
        &taken);
    EXPECT_GE(taken, static_cast<int>(specs.size())) << name << ": not even 1 element took it";
  }
}

// A small cap: the kernels' rings are fitted to it (fewer FIFO slots, smaller chunks), each relay GPU's area never
// passes it, and the calls stay right.
TEST(RelaysCap, ASmallCapIsFittedAndKept) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const RelayCase& tc = kCases[5];  // dgx1-p100 {0,1}: Blink+'s own case
  CommunicatorOptions o = relay_options(tc, Forced::trees);
  o.relay_memory = std::int64_t{2} << 20;
  std::unique_ptr<Communicator> comm;
  ASSERT_TRUE(Communicator::create(o, &comm).ok());
  const std::vector<CollectiveSpec> specs = relay_specs(Collective::broadcast, 2);
  CheckedCallSetup setup;
  const std::uint64_t counts[] = {1028, 3000004, 40000004};
  ASSERT_TRUE(setup.make(*comm, relay_buffer_bytes(Collective::broadcast, 2, counts[2])));
  int planned = 0;
  testing::check_every_call(*comm, setup.buffers(), specs, counts, "p100_01 cap 2MiB",
                            [](const CollectiveSpec&, std::uint64_t) { return true; }, &planned);
  for (std::uint64_t count : counts) {
    CollectiveInfo info;
    ASSERT_TRUE(comm->info(comm->spec_of(Collective::broadcast, count, DataType::f32, ReduceOp::sum, 0), &info).ok());
    EXPECT_FALSE(relay_gpus_of(info.plan, comm->topology()).empty()) << "count " << count << ": no relay used";
    for (std::size_t k = 0; k < info.relays.size(); ++k) {
      EXPECT_LE(info.relay_area_bytes[k], o.relay_memory.value()) << info.relays[k];
      std::cout << fmt::format("[ relay ] count {}: {} rings {} bytes, area {} bytes (chunk {}, FIFO depth {})\n",
                               count, info.relays[k], info.relay_ring_bytes[k], info.relay_area_bytes[k],
                               info.options.chunk_bytes, info.options.fifo_depth);
    }
  }
}

// What a relay cannot be, refused at create naming the fix.
TEST(RelaysCap, RelaysThatCannotRunAreRefused) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  CommunicatorOptions o = relay_options(kCases[0], Forced::trees);
  o.relays = {"gpu1"};
  std::unique_ptr<Communicator> comm;
  Status s = Communicator::create(o, &comm);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("relay gpu1 is also a rank"), std::string::npos) << s.message();
  o.relays = {"gpu2"};
  o.relay_memory = 1000;
  s = Communicator::create(o, &comm);
  EXPECT_NE(s.message().find("give each relay GPU at least 1 MiB"), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(Dgx1Allocations, RelaysOnGpu, ::testing::ValuesIn(testing::every_collective_of(kCases)),
                         [](const auto& info) { return testing::topology_collective_name(kCases, info.param); });

}  // namespace
}  // namespace canopy
