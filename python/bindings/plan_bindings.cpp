// canopy.plan and canopy.Plan: the planner's weighted trees with their rate and proven bound, the trees as plain
// Python data, the plan JSON of docs/planner.md both ways, link loads, the validity check, and the DOT picture.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "core/collective.hpp"
#include "core/error.hpp"
#include "planner/alltoall.hpp"
#include "planner/alltoall_summary.hpp"
#include "planner/plan_dot.hpp"
#include "planner/plan_eval.hpp"
#include "planner/plan_json.hpp"
#include "planner/planner.hpp"
#include "python/bindings/bindings.hpp"
#include "topology/shipped_topologies.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace canopy::python {
namespace {

Collective collective_named(const std::string& name) {
  const std::optional<Collective> c = parse_collective(name);
  if (!c)
    throw Error("collective '" + name +
                "': expected broadcast, reduce, allreduce, allgather or reducescatter (the all-to-all's routes: "
                "canopy.plan_alltoall)");
  return *c;
}

nb::list tree_list(const Plan& p) {
  nb::list out;
  for (const Tree& t : p.trees) {
    nb::list edges;
    for (const TreeEdge& e : t.edges) {
      nb::dict d;
      d["from"] = e.from;
      d["to"] = e.to;
      d["path"] = e.path;
      edges.append(d);
    }
    nb::dict d;
    d["root"] = t.root;
    d["direction"] = to_string(t.direction);
    d["phase"] = t.phase;
    d["fraction"] = t.fraction;
    d["edges"] = edges;
    out.append(d);
  }
  return out;
}

nb::list load_list(const BoundPlan& b) {
  nb::list out;
  for (const LinkLoad& l : link_loads(b.topology, b.plan)) {
    nb::dict d;
    d["from"] = b.topology.node(l.from).name;
    d["to"] = b.topology.node(l.to).name;
    d["capacity_gbps"] = l.capacity_gbps;
    d["load"] = l.load;
    d["utilization"] = l.utilization;
    out.append(d);
  }
  return out;
}

BoundPlan make_plan(const Topology& topology, const std::string& collective, const std::vector<std::string>& gpus,
                    const std::optional<std::string>& root, bool relay, const std::vector<std::string>& relay_gpus) {
  PlanOptions o;
  o.gpus = gpus;
  o.root = root;
  o.relay = relay;
  o.relay_gpus = relay_gpus;
  BoundPlan b{planning_topology(topology, o), {}};
  // The planner takes the whole topology and the options (as `canopy plan` does); the plan's paths name nodes of
  // planning_topology, which evaluations use.
  b.plan = plan(topology, collective_named(collective), o);
  return b;
}

}  // namespace

void bind_plan(nb::module_& m) {
  nb::class_<BoundPlan>(m, "Plan", "Weighted spanning trees that reach the proven optimum rate (docs/planner.md)")
      .def_prop_ro("collective", [](const BoundPlan& b) { return std::string(to_string(b.plan.collective)); })
      .def_prop_ro("topology", [](const BoundPlan& b) { return b.topology; },
                   "the topology the plan runs on (the chosen GPUs', or the whole machine's with relays)")
      .def_prop_ro("ranks", [](const BoundPlan& b) { return b.plan.ranks; }, "GPU names in rank order")
      .def_prop_ro("root", [](const BoundPlan& b) { return b.plan.root; })
      .def_prop_ro("rate", [](const BoundPlan& b) { return b.plan.algbw_gbps; },
                   "predicted algbw in GB/s, from link loads alone (`canopy plan`'s algbw)")
      .def_prop_ro("bound", [](const BoundPlan& b) { return b.plan.bound_algbw_gbps; },
                   "proven upper bound on any algorithm's algbw, GB/s")
      .def_prop_ro("strategy", [](const BoundPlan& b) { return plan_strategy(b.plan); })
      .def_prop_ro("trees", [](const BoundPlan& b) { return tree_list(b.plan); },
                   "list of {root, direction, phase, fraction, edges: [{from, to, path}]}")
      .def_prop_ro("link_loads", &load_list, "per directed link: capacity, load per phase, utilization")
      .def("check", [](const BoundPlan& b) { return check_plan(b.topology, b.plan); },
           "every reason the plan is invalid for its topology (empty: valid)")
      .def("to_json", [](const BoundPlan& b) { return plan_to_json(b.plan); }, "the plan JSON of docs/planner.md")
      .def("to_dot", [](const BoundPlan& b) { return plan_dot(b.topology, b.plan); },
           "Graphviz DOT: each tree in its colour over the links")
      .def_static(
          "from_json",
          [](const std::string& text, const std::optional<Topology>& topology, const std::string& origin) {
            Plan p = plan_from_json(text, origin);
            if (topology) return BoundPlan{*topology, std::move(p)};
            // The topology it was planned on, as planning_topology gives it: the whole machine where its paths cross
            // GPUs that are no ranks (relays), else the ranks' GPUs alone.
            const Topology machine = load_topology(p.topology);
            PlanOptions made;
            made.gpus = p.ranks;
            made.relay = !relay_gpus_of(p, machine).empty();
            return BoundPlan{planning_topology(machine, made), std::move(p)};
          },
          "text"_a, "topology"_a = nb::none(), "origin"_a = "<json>",
          "Reads plan JSON; its topology is loaded by the name it records (the ranks' GPUs of it, or the whole "
          "machine for a plan with relays) unless given")
      .def("__repr__", [](const BoundPlan& b) {
        char rate[64];
        std::snprintf(rate, sizeof rate, "%.2f of %.2f GB/s", b.plan.algbw_gbps, b.plan.bound_algbw_gbps);
        return "Plan(" + std::string(to_string(b.plan.collective)) + " on " + b.plan.topology + ", " +
               std::to_string(b.plan.ranks.size()) + " ranks, " + std::to_string(b.plan.trees.size()) + " trees, " +
               rate + ")";
      });
  m.def(
      "_plan_alltoall",
      [](const Topology& topology, const std::vector<std::string>& gpus, bool relay,
         const std::vector<std::string>& relay_gpus) {
        PlanOptions o;
        o.gpus = gpus;
        o.relay = relay;
        o.relay_gpus = relay_gpus;
        return alltoall_to_json(plan_alltoall(topology, o));
      },
      "topology"_a, "gpus"_a, "relay"_a, "relay_gpus"_a = std::vector<std::string>{},
      "The all-to-all's routes as `canopy plan -c alltoall --json` writes them");
  m.def("plan", &make_plan, "topology"_a, "collective"_a, "gpus"_a = std::vector<std::string>{}, "root"_a = nb::none(),
        "relay"_a = false, "relay_gpus"_a = std::vector<std::string>{},
        "Plans a collective (canopy plan): gpus by name or index as text; relay_gpus: with relay, only these GPUs "
        "forward (empty: any outside gpus)");
}

}  // namespace canopy::python
