// canopy._simulate: `canopy simulate`'s rows (simulator/simulate_table.hpp) as JSON text, which the Python package
// turns into a list of dicts (and a DataFrame, and a plot). Sizes come as `--sizes` text or a list of byte counts.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <nlohmann/json.hpp>

#include "bench/harness/benchmark.hpp"
#include "core/byte_size.hpp"
#include "core/collective.hpp"
#include "core/error.hpp"
#include "python/bindings/bindings.hpp"
#include "simulator/simulate_table.hpp"
#include "planner/planner.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace canopy::python {
namespace {

// The rows and what they compare, as one JSON object: {"collective", "topology", "ranks", "plan_algbw_GBps", "rings",
// "ring_GBps", "relays_used", "rows": [...]}.
std::string simulate_json(const Topology& topology, const std::string& collective, const std::vector<std::string>& gpus,
                          const std::optional<std::string>& root, const std::vector<std::uint64_t>& sizes,
                          const std::string& chunk, double launch_us, double chunk_cost_us, double latency_scale,
                          bool relay, const std::vector<std::string>& relay_gpus) {
  const std::optional<Collective> c = parse_collective(collective);
  if (!c)
    throw Error("collective '" + collective +
                "': expected broadcast, reduce, allreduce, allgather or reducescatter (for alltoall run `canopy "
                "simulate -c alltoall`)");
  PlanOptions chosen;
  chosen.gpus = gpus;
  const Topology ranks = planning_topology(topology, chosen);  // the chosen GPUs alone (all where none are named)
  if (relay && gpus.empty())
    throw Error("relay=True lets GPUs outside `gpus` forward: give gpus a subset of " + topology.name() +
                "'s GPUs, e.g. gpus=[0, 1]");
  // The relays' machine (planning_topology): the whole topology, or with relay_gpus the ranks and those GPUs alone.
  std::optional<Topology> relay_machine;
  if (relay) relay_machine = planning_topology(topology, PlanOptions{gpus, std::nullopt, true, relay_gpus});
  SimulateTableOptions o;
  o.root = root;
  o.sizes = sizes;
  o.base.launch_us = launch_us;
  o.base.chunk_cost_us = chunk_cost_us;
  o.base.latency_scale = latency_scale;
  o.automatic_chunk = chunk == "auto";
  if (!o.automatic_chunk) o.base.chunk_bytes = parse_byte_size(chunk, "chunk");
  const SimulateTable t = simulate_table(ranks, *c, o, relay_machine ? &*relay_machine : nullptr);
  return nlohmann::json{{"collective", to_string(*c)},
                        {"topology", topology.name()},
                        {"ranks", t.plan.ranks},
                        {"plan_algbw_GBps", t.plan.algbw_gbps},
                        {"rings", t.rings.rings},
                        {"ring_GBps", t.rings.ring_gbps},
                        {"relays_used", t.relays_used},
                        {"rows", simulate_rows_json(t)}}
      .dump();
}

}  // namespace

void bind_simulate(nb::module_& m) {
  m.def("_simulate", &simulate_json, "topology"_a, "collective"_a, "gpus"_a, "root"_a, "sizes"_a, "chunk"_a,
        "launch_us"_a, "chunk_cost_us"_a, "latency_scale"_a, "relay"_a, "relay_gpus"_a = std::vector<std::string>{},
        "canopy simulate's rows as JSON text (canopy.simulate wraps it)");
  m.def("parse_sizes", &parse_bench_sizes, "text"_a,
        "Sizes as --sizes reads them: 8:1G (powers of two), 1M:64M:4 (factor 4) or 1K,64K,1M; in bytes");
  m.def("size_text", &bench_size_text, "bytes"_a, "A size as the tables print it: 64K, 1M, 1G");
}

}  // namespace canopy::python
