// The all-to-all planner's rate and bound against an exhaustive path LP built here: every simple path of every ordered
// pair enumerated (through switches and GPUs alike), one variable per path, solved by GLPK. On topologies of 4-6 GPUs
// the two formulations must agree to 1e-6 relative, and so must the planner's bound.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <map>

#include "topology/shipped_topologies.hpp"
#include "topology/topo_reader.hpp"
#include "planner/alltoall.hpp"
#include "planner/linear_program.hpp"

namespace canopy {
namespace {

using planner::LinearProgram;

// The maximum concurrent flow over all simple paths: maximise λ with Σ_paths(s,d) x_p ≥ λ and Σ_{p ∋ e} x_p ≤ c_e.
double path_lp_pair_gbps(const Topology& t, const std::vector<std::string>& ranks) {
  std::map<std::pair<int, int>, double> capacity;
  for (const Arc& a : t.arcs()) capacity[{a.from.index, a.to.index}] += a.gbps;
  std::map<std::pair<int, int>, int> link_id;
  std::vector<std::vector<int>> out(t.nodes().size());
  for (const auto& [link, gbps] : capacity) {
    link_id[link] = static_cast<int>(link_id.size());
    out[link.first].push_back(link.second);
  }

  LinearProgram lp;
  const int lambda = lp.add_column(0, LinearProgram::kUnbounded, 1);
  std::vector<std::vector<std::pair<int, double>>> on_link(link_id.size());
  std::size_t path_count = 0;
  for (const std::string& from : ranks) {
    for (const std::string& to : ranks) {
      if (from == to) continue;
      const int s = t.find(from)->index, d = t.find(to)->index;
      std::vector<std::pair<int, double>> demand{{lambda, 1.0}};
      std::vector<char> on_path(t.nodes().size(), 0);
      std::vector<int> links;
      const std::function<void(int)> walk = [&](int v) {
        if (v == d) {
          const int x = lp.add_column(0, LinearProgram::kUnbounded, 0);
          demand.emplace_back(x, -1.0);
          for (int e : links) on_link[e].emplace_back(x, 1.0);
          ++path_count;
          return;
        }
        on_path[v] = 1;
        for (int w : out[v]) {
          if (on_path[w]) continue;
          links.push_back(link_id.at({v, w}));
          walk(w);
          links.pop_back();
        }
        on_path[v] = 0;
      };
      walk(s);
      lp.add_at_most(demand, 0);  // λ − Σ x_p ≤ 0
    }
  }
  for (const auto& [link, e] : link_id) lp.add_at_most(on_link[e], capacity.at(link));
  ::testing::Test::RecordProperty("paths", static_cast<int>(path_count));
  return lp.solve(LinearProgram::Sense::maximize);
}

struct Case {
  std::string topology;  // a shipped name, or the name of kIrregular
  std::string gpus;      // --gpus; empty: all
  bool relay = false;
};

// Five GPUs with unequal and one-way links and a switch that fans in more than it sends out: nothing symmetric for
// either formulation to lean on.
constexpr const char* kIrregular = R"(topology irregular
gpus 5
switch sw
link gpu0 gpu1 50 nvlink2
link gpu1 gpu2 25 nvlink2
arc gpu2 gpu3 40 nvlink2
arc gpu3 gpu2 10 nvlink2
link gpu3 gpu4 25 nvlink2
arc gpu4 gpu0 30 nvlink2
arc gpu0 gpu3 15 nvlink2
link gpu0 sw 20 pcie4
link gpu2 sw 20 pcie4
arc gpu4 sw 31.5 pcie4
arc sw gpu4 5 pcie4
arc gpu1 sw 12 pcie4
)";

class AlltoallExhaustive : public ::testing::TestWithParam<Case> {};

TEST_P(AlltoallExhaustive, PlannerMatchesThePathLp) {
  const Case& c = GetParam();
  const Topology full = c.topology == "irregular" ? read_topo(kIrregular, "irregular.topo") : load_topology(c.topology);
  PlanOptions options;
  if (!c.gpus.empty()) options.gpus = {c.gpus};
  options.relay = c.relay;
  const Topology t = planning_topology(full, options);
  const AlltoallPlan plan = plan_alltoall(full, options);
  ASSERT_GE(plan.ranks.size(), 4u);
  ASSERT_LE(plan.ranks.size(), 6u);
  const double exhaustive = path_lp_pair_gbps(t, plan.ranks);
  EXPECT_NEAR(plan.pair_gbps, exhaustive, 1e-6 * exhaustive);
  EXPECT_NEAR(plan.bound_pair_gbps, exhaustive, 1e-6 * exhaustive);
}

INSTANTIATE_TEST_SUITE_P(
    Topologies, AlltoallExhaustive,
    ::testing::Values(Case{"pcie-4gpu", ""}, Case{"dgx1-v100", "0,1,2,3"}, Case{"dgx1-v100", "0,1,4,5"},
                      Case{"dgx1-v100", "0,1,2,3,5"}, Case{"dgx1-v100", "0,2,5,7"},
                      Case{"dgx1-v100", "0,1,2,4,5,6"}, Case{"dgx1-p100", "0,1,4,5"},
                      Case{"dgx1-p100", "0,1,2,3,4"}, Case{"hgx-h100", "0,1,2,3"},
                      Case{"dgx1-v100", "0,2,5,7", true}, Case{"irregular", ""}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name = info.param.topology + "_" + (info.param.gpus.empty() ? "all" : info.param.gpus) +
                         (info.param.relay ? "_relay" : "");
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace
}  // namespace canopy
