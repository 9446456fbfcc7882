// The `canopy` CLI's subcommands: each file in tools/ adds one (sub)command to the app.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "dsl/algorithm.hpp"
#include "topology/topology.hpp"
#include "core/collective.hpp"
#include "runtime/comm/communicator.hpp"
#include "simulator/simulate.hpp"

namespace canopy::cli {

void add_topo_command(CLI::App& app);  // topo.cpp: the `topo` group
void add_plan_command(CLI::App& app);  // plan_command.cpp
void add_gen_command(CLI::App& app);   // gen.cpp
void add_compile_command(CLI::App& app);  // compile.cpp
void add_cache_command(CLI::App& app);    // cache.cpp
void add_bench_command(CLI::App& app);    // bench.cpp
void add_detect_command(CLI::App& app);   // detect.cpp
void add_simulate_command(CLI::App& app);  // simulate_command.cpp
void add_algo_command(CLI::App& app);      // algo.cpp
void add_msccl_command(CLI::App& app);     // msccl.cpp
void add_tune_command(CLI::App& app);      // tune.cpp
void add_warm_command(CLI::App& app);      // warm.cpp
void add_run_command(CLI::App& app);       // run.cpp
void add_nccl_tests_compare_command(CLI::App& app);  // nccl_tests_compare_command.cpp
void add_bench_compare_command(CLI::App& app);       // bench_compare_command.cpp
// Runs `program` as `ranks` processes as `canopy run -n` does (its variables, signals, first failing status).
int run_processes(int ranks, const std::vector<std::string>& program);
// `canopy run --hosts`: per rank its host (-1: no --hosts), local rank and its host's size; `hosts` "2,2" (empty:
// one host of `ranks`). Throws canopy::Error when the list is not numbers >= 1 adding up to `ranks`.
struct RankPlace {
  int host = -1;
  int local = 0;
  int local_size = 1;
};
std::vector<RankPlace> host_places(int ranks, const std::string& hosts);
void add_topo_list(CLI::App& topo);    // topo_list.cpp
void add_topo_show(CLI::App& topo);    // topo_show.cpp
void add_topo_check(CLI::App& topo);   // topo_check.cpp
void add_topo_dot(CLI::App& topo);     // topo_dot.cpp
void add_topo_import(CLI::App& topo);  // topo_import.cpp

// `NAME|FILE [--gpus a,b,..]` as every command takes a topology (topology_option.cpp).
struct TopologyArgs {
  std::string topology;
  std::string gpus;  // empty: all GPUs
};
void add_topology_args(CLI::App& command, TopologyArgs& args, bool positional, bool required = true);
Topology resolve_topology(const TopologyArgs& args);

// `--relay` and `--relays LIST` as plan, simulate, gen and compile take them (topology_option.cpp): other GPUs may
// forward for the ranks (Blink+); with --relays only those (names or indices), which implies --relay.
struct RelayArgs {
  bool relay = false;
  std::string relays;
  bool on() const { return relay || !relays.empty(); }
  std::vector<std::string> gpus() const;  // --relays as a list (empty: any GPU outside the ranks)
};
void add_relay_args(CLI::App& command, RelayArgs& args, const std::string& relay_help);

// The Communicator that `-t/--gpus` and `--devices 0,1` describe, as `canopy bench` and `canopy tune` take them
// (topology_option.cpp): a named topology or the detected one, its chosen GPUs, the CUDA devices. Throws
// canopy::Error naming a bad --devices list.
CommunicatorOptions communicator_options(const TopologyArgs& topology, const std::string& devices);

// The value of `--collective`, or a canopy::Error listing the five names (topology_option.cpp).
Collective collective_option(const std::string& name);
// A list of them, or "all" for the five (topology_option.cpp).
std::vector<Collective> collectives_option(const std::string& text);

// The values of `--dtype` and `--op`, or a canopy::Error listing the names (topology_option.cpp).
DataType dtype_option(const std::string& name);
ReduceOp op_option(const std::string& name);

// `NAME|FILE.xml` as `canopy algo verify`, `gen` and `compile` take a program: a shipped algorithm built for `ranks`
// (0: 8), or MSCCL-IR XML (whose rank count `ranks`, when > 0, must match). Throws canopy::Error (program_option.cpp).
algo::Program program_option(const std::string& name_or_file, int ranks);
// `gpus` GPUs on one NVSwitch, every pair joined at NVLink4 rate: where a program runs when no topology is named.
Topology switch_topology(int gpus);

// The whole of the file at `path`, or a canopy::Error naming it and what to give instead (`what`: "an nccl-tests
// log", ...) (input_file.cpp).
std::string read_input_file(const std::string& path, const char* what);
// A comparing command's (BASE, NEW) pairs: the two positional files, if given, then every --pair. One positional file
// alone is an error naming it (`noun` "log", `files` "BASE.log NEW.log") (input_file.cpp).
std::vector<std::pair<std::string, std::string>> base_new_pairs(
    const std::vector<std::string>& given, const std::vector<std::pair<std::string, std::string>>& more,
    const char* noun, const char* files);

// Writes `text` to `path` ("-" = stdout), as a canopy::Error naming the path when it cannot.
void write_output(const std::string& path, const std::string& text);

// `canopy simulate -c alltoall` (simulate_alltoall.cpp): the planned routes and NCCL-style direct routes per size,
// each run through `run` (a fixed chunk, or the best one); a table on stdout, and the rows as JSON to `json` when given
// (- : stdout instead of the table).
using SimulateRun = std::function<SimResult(const std::function<SimResult(const SimOptions&)>&, std::uint64_t)>;
void simulate_alltoall_sizes(const Topology& topology, const std::vector<std::uint64_t>& sizes,
                             const SimulateRun& run, const std::string& json);

// Renders DOT text to an SVG file with Graphviz's `dot` (graphviz.cpp).
void render_svg(const std::string& dot, const std::string& svg_path);

}  // namespace canopy::cli
