// canopy-sim-vs-measured TOPO BENCH.json (--help says more): the simulator against a `canopy bench
// --json` measurement. Link rates come from TOPO (e.g. `canopy detect
// --measure`); the launch cost and the per-hop latency scale are calibrated once for the machine (all collectives
// together, a grid search minimising the mean |log(predicted / measured)| time); then every row is printed with its
// error. The chunk follows the runtime's shape: 256 KiB per block, 24 blocks per rank below 8 MiB per rank and 128
// from there (docs/runtime.md), so a tree's pipeline step is 256 KiB x its blocks.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"
#include "simulator/simulate.hpp"
#include "tools/usage/command_line.hpp"

namespace {

using namespace canopy;

struct Measured {
  Collective collective;
  std::int64_t bytes;
  double time_us, busbw;
};

std::int64_t runtime_chunk(const Plan& p, std::int64_t bytes) {
  const int n = static_cast<int>(p.ranks.size());
  const std::int64_t per_rank = p.collective == Collective::allgather ? bytes / n : bytes;
  const int blocks = per_rank >= (8 << 20) ? 128 : 24;
  const int per_tree = std::max<int>(1, blocks / static_cast<int>(p.trees.size()));
  return std::int64_t{256 << 10} * per_tree;
}

}  // namespace

int main(int argc, char** argv) {
  std::string topology_name, bench_file;
  CLI::App app{
      "The simulator against a measurement. Plans each collective of BENCH.json (`canopy bench --json` rows) on\n"
      "TOPOLOGY, calibrates the launch cost and the per-hop latency scale once for the machine (a grid search\n"
      "minimising the mean |log(predicted / measured)| time), then prints every row with its error and each\n"
      "collective's median and worst error below and from 1 MiB. Runs on the CPU.\n"};
  app.name("canopy-sim-vs-measured");
  app.add_option("TOPOLOGY", topology_name,
                 "the machine: a .topo file with measured link rates (`canopy detect --measure`) or a shipped name")
      ->required();
  app.add_option("BENCH.json", bench_file, "the measurement: what `canopy bench --json` wrote")
      ->required()
      ->check(CLI::ExistingFile);
  app.footer(
      "Example:\n"
      "  canopy detect --measure --out measured.topo && canopy bench --json bench.json     on the GPU machine\n"
      "  canopy-sim-vs-measured measured.topo bench.json\n"
      "docs/simulator.md shows a run.");
  if (const auto status = canopy::cli::parse_command_line(app, argc, argv)) return *status;
  try {
    const Topology t = load_topology(topology_name);
    std::ifstream in(bench_file);
    if (!in) throw std::runtime_error(fmt::format("cannot read {}", bench_file));
    const nlohmann::json rows = nlohmann::json::parse(in);
    std::vector<Measured> measured;
    std::map<Collective, Plan> plans;
    for (const auto& r : rows) {
      const auto c = parse_collective(r.at("collective").get<std::string>());
      if (!c) continue;
      measured.push_back(
          {*c, r.at("bytes").get<std::int64_t>(), r.at("time_us").get<double>(), r.at("busbw_GBps").get<double>()});
      if (!plans.count(*c)) plans.emplace(*c, plan(t, *c));
    }
    auto predict = [&](const Measured& m, double launch, double latency_scale) {
      const Plan& p = plans.at(m.collective);
      SimOptions o;
      o.launch_us = launch;
      o.latency_scale = latency_scale;
      o.chunk_bytes = runtime_chunk(p, m.bytes);
      return simulate_plan(t, p, m.bytes, o);
    };
    double best_launch = 0, best_scale = 1, best_cost = 1e300;
    for (double launch = 0; launch <= 30.001; launch += 0.25)
      for (double scale = 0; scale <= 8.001; scale += 0.25) {
        double cost = 0;
        for (const Measured& m : measured) cost += std::abs(std::log(predict(m, launch, scale).time_us / m.time_us));
        if (cost < best_cost) best_cost = cost, best_launch = launch, best_scale = scale;
      }
    fmt::print("# simulator vs measurement: {} on {}, {} rows\n", bench_file, topology_name, measured.size());
    fmt::print(
        "# calibrated: launch {:.2f} us, latency x {:.2f} (per hop "
        "{:.2f} us on this topology's links); "
        "0.5 us per chunk and hop; chunk 256 KiB x the tree's blocks\n",
        best_launch, best_scale, best_scale * latency_of(t.arcs().front()));
    std::map<Collective, std::vector<double>> small, large;
    fmt::print("{:<14} {:>12} {:>12} {:>12} {:>12} {:>12} {:>8}\n", "collective", "bytes", "meas(us)", "pred(us)",
               "meas_busbw", "pred_busbw", "error");
    for (const Measured& m : measured) {
      const SimResult r = predict(m, best_launch, best_scale);
      const double error = r.time_us / m.time_us - 1;
      (m.bytes >= (1 << 20) ? large : small)[m.collective].push_back(std::abs(error));
      fmt::print("{:<14} {:>12} {:>12.2f} {:>12.2f} {:>12.2f} {:>12.2f} {:>+7.1f}%\n", to_string(m.collective), m.bytes,
                 m.time_us, r.time_us, m.busbw, r.busbw_gbps, 100 * error);
    }
    auto median = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    auto worst = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
    fmt::print(
        "\n# |time error| per collective: median (max) below 1 MiB | "
        "from 1 MiB\n");
    for (const auto& [c, p] : plans)
      fmt::print("{:<14} {:>6.1f}% ({:>5.1f}%) | {:>6.1f}% ({:>5.1f}%)\n", to_string(c), 100 * median(small[c]),
                 100 * worst(small[c]), 100 * median(large[c]), 100 * worst(large[c]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "canopy-sim-vs-measured: %s\n", e.what());
    return 1;
  }
  return 0;
}
