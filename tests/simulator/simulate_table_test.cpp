// simulate_table: the rows `canopy simulate` and canopy.simulate share: one row per size, each baseline where it
// applies (NCCL's tree for allreduce, the relay plan with a relay machine), the JSON keys of docs/simulator.md, and
// its refusals.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "simulator/simulate_table.hpp"
#include "topology/shipped_topologies.hpp"
#include "topology/topology_subset.hpp"

namespace canopy {
namespace {

SimulateTableOptions sizes(std::vector<std::uint64_t> s) {
  SimulateTableOptions o;
  o.sizes = std::move(s);
  return o;
}

TEST(SimulateTable, AllreduceRowsCarryTheRingsAndNcclsTree) {
  const Topology t = load_topology("dgx1-v100");
  const SimulateTable table = simulate_table(t, Collective::allreduce, sizes({1 << 20, 256 << 20}));
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.plan.ranks.size(), 8u);
  EXPECT_GT(table.rings.rings, 0);
  ASSERT_TRUE(table.tree);
  for (const SimulateRow& r : table.rows) {
    EXPECT_GT(r.ours.time_us, 0);
    EXPECT_GT(r.rings.time_us, 0);
    ASSERT_TRUE(r.tree);
    EXPECT_FALSE(r.relay || r.hier);
  }
  EXPECT_GT(table.rows[1].ours.busbw_gbps, table.rows[0].ours.busbw_gbps) << "larger sizes pipeline better";
  const nlohmann::json rows = simulate_rows_json(table);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["bytes"], 256 << 20);
  EXPECT_EQ(rows[0].size(), 10u) << rows[0].dump();
  EXPECT_DOUBLE_EQ(rows[1]["speedup"].get<double>(), table.rows[1].rings.time_us / table.rows[1].ours.time_us);
}

TEST(SimulateTable, BroadcastHasNoTreeAndAFixedChunkIsKept) {
  SimulateTableOptions o = sizes({64 << 20});
  o.automatic_chunk = false;
  o.base.chunk_bytes = 1 << 20;
  o.root = "gpu3";
  const SimulateTable table = simulate_table(load_topology("dgx1-v100"), Collective::broadcast, o);
  EXPECT_FALSE(table.tree);
  EXPECT_EQ(table.plan.root, "gpu3");
  EXPECT_EQ(table.rows[0].ours.chunk_bytes, 1 << 20);
  EXPECT_EQ(simulate_rows_json(table)[0].size(), 8u);
}

TEST(SimulateTable, ARelayMachineAddsThePlanWithRelaysAndNamesThem) {
  const Topology machine = load_topology("dgx1-p100");
  const Topology ranks = select_gpus(machine, parse_gpu_list(machine, "0,1"));
  const SimulateTable table = simulate_table(ranks, Collective::broadcast, sizes({256 << 20}), &machine);
  ASSERT_TRUE(table.relayed && table.rows[0].relay);
  EXPECT_FALSE(table.relays_used.empty());
  EXPECT_LT(table.rows[0].relay->time_us, table.rows[0].ours.time_us) << "other GPUs' idle links carry more";
  const nlohmann::json row = simulate_rows_json(table)[0];
  EXPECT_TRUE(row.contains("relay_busbw_GBps") && row.contains("relay_speedup"));
}

TEST(SimulateTable, RefusesWhatItCannotPredict) {
  const Topology t = load_topology("h200x2");
  EXPECT_THROW(simulate_table(t, Collective::allreduce, sizes({})), Error);
  EXPECT_THROW(simulate_table(t, Collective::allreduce, sizes({0})), Error);
  SimulateTableOptions bad = sizes({1 << 20});
  bad.base.launch_us = -1;
  EXPECT_THROW(simulate_table(t, Collective::allreduce, bad), Error);
  try {
    simulate_table(t, Collective::allreduce, sizes({1 << 20}), &t);
    FAIL() << "a relay machine with no GPU outside the ranks is refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("none outside its 2 ranks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace canopy
