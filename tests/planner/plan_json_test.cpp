// Plan JSON: the format of docs/planner.md exactly, lossless round trips, precise errors; check_plan catches tampering.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/plan_eval.hpp"
#include "planner/plan_json.hpp"
#include "planner/planner.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

std::set<std::string> keys(const nlohmann::json& j) {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}

TEST(PlanJson, HasExactlyTheFieldsOfTheDesign) {
  const Plan p = plan(load_topology("dgx2"), Collective::broadcast, {{}, "gpu3", false});
  const auto j = nlohmann::json::parse(plan_to_json(p));
  EXPECT_EQ(keys(j), (std::set<std::string>{"collective", "topology", "ranks", "root", "algbw_GBps",
                                            "bound_algbw_GBps", "trees"}));
  EXPECT_EQ(j["root"], "gpu3");
  bool saw_path = false;
  for (const auto& tree : j["trees"]) {
    EXPECT_EQ(keys(tree), (std::set<std::string>{"root", "direction", "phase", "fraction", "edges"}));
    for (const auto& e : tree["edges"]) {
      const auto k = keys(e);
      EXPECT_TRUE(k == (std::set<std::string>{"from", "to"}) || k == (std::set<std::string>{"from", "to", "path"}));
      if (e.contains("path")) {
        saw_path = true;
        EXPECT_EQ(e["path"].front(), e["from"]);
        EXPECT_EQ(e["path"].back(), e["to"]);
      }
    }
  }
  EXPECT_TRUE(saw_path) << "dgx2 trees cross NVSwitches, so edges carry paths";
  const auto allgather = nlohmann::json::parse(plan_to_json(plan(load_topology("dgx2"), Collective::allgather)));
  EXPECT_FALSE(allgather.contains("root"));
}

TEST(PlanJson, RoundTripsEveryCollective) {
  const Topology t = load_topology("dgx1-v100");
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                       Collective::reducescatter}) {
    const Plan p = plan(t, c);
    const Plan back = plan_from_json(plan_to_json(p), "plan.json");
    EXPECT_EQ(back, p) << to_string(c);
    EXPECT_TRUE(check_plan(t, back).empty());
  }
}

TEST(PlanJson, NamesTheFieldThatIsWrong) {
  auto message = [](const std::string& text) -> std::string {
    try {
      plan_from_json(text, "p.json");
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_THAT(message("{"), HasSubstr("p.json: not valid JSON"));
  EXPECT_THAT(message("[1,[1e710 "), HasSubstr("p.json: not valid JSON"));  // found by fuzzing: number overflow
  EXPECT_THAT(message("[]"), HasSubstr("a plan is a JSON object"));
  EXPECT_THAT(message(R"({"collective":"gather"})"), HasSubstr("collective: unknown collective 'gather'"));
  EXPECT_THAT(message(R"({"collective":"broadcast","topology":"t"})"), HasSubstr("missing field \"ranks\""));
  const std::string head =
      R"({"collective":"broadcast","topology":"t","ranks":["a","b"],"algbw_GBps":1,"bound_algbw_GBps":1,)";
  EXPECT_THAT(message(head + R"("trees":[{"root":"a","direction":"up","phase":0,"fraction":1,"edges":[]}]})"),
              HasSubstr("trees[0].direction: expected \"in\" or \"out\""));
  EXPECT_THAT(message(head + R"("trees":[{"root":"a","direction":"out","phase":0.5,"fraction":1,"edges":[]}]})"),
              HasSubstr("trees[0].phase: expected an integer"));
  EXPECT_THAT(message(head + R"("trees":[{"root":"a","direction":"out","phase":0,"fraction":1,"edges":[{"from":"a","to":3}]}]})"),
              HasSubstr("trees[0].edges[0].to: expected a string"));
  EXPECT_THAT(message(head + R"("trees":[{"root":"a","direction":"out","phase":0,"fraction":"x","edges":[]}]})"),
              HasSubstr("trees[0].fraction: expected a finite number"));
}

TEST(CheckPlan, CatchesEveryKindOfTampering) {
  const Topology t = load_topology("dgx1-v100");
  const Plan good = plan(t, Collective::allgather);
  ASSERT_TRUE(check_plan(t, good).empty());
  auto first_problem = [&](const Plan& p) {
    const auto problems = check_plan(t, p);
    return problems.empty() ? std::string("(valid)") : problems.front();
  };
  Plan p = good;
  p.trees[0].fraction *= 2;
  EXPECT_THAT(first_problem(p), HasSubstr("sum to"));
  p = good;
  p.trees[0].edges.pop_back();
  EXPECT_THAT(first_problem(p), HasSubstr("spans 7 of 8 ranks"));
  p = good;
  p.trees[0].edges.push_back(p.trees[0].edges.front());
  EXPECT_THAT(first_problem(p), HasSubstr("is reached twice"));
  p = good;
  p.algbw_gbps *= 1.5;
  EXPECT_THAT(first_problem(p), HasSubstr("but the link loads give"));
  p = good;
  p.trees[0].edges[0].path = {p.trees[0].edges[0].from, "plx3", p.trees[0].edges[0].to};
  EXPECT_NE(first_problem(p), "(valid)");
  p = good;
  p.trees[0].direction = TreeDirection::in;
  EXPECT_THAT(first_problem(p), HasSubstr("direction in does not belong in allgather"));
  p = good;
  p.ranks.push_back("plx0");
  EXPECT_THAT(first_problem(p), HasSubstr("rank 'plx0' is not a GPU"));
}

}  // namespace
}  // namespace canopy
