// The topology arguments every command shares (`NAME|FILE`, `--gpus`) and output-file writing.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "topology/topology_subset.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_topology_args(CLI::App& command, TopologyArgs& args, bool positional, bool required) {
  const char* help = "a shipped topology name (see `canopy topo list`) or a .topo file";
  if (positional)
    command.add_option("topology", args.topology, help)->required();
  else
    command.add_option("--topology,-t", args.topology, help)->required(required);
  command.add_option("--gpus,-g", args.gpus,
                     "use only these GPUs (a tenant's allocation): names or indices, e.g. gpu0,gpu3 or 0,3");
}

void add_relay_args(CLI::App& command, RelayArgs& args, const std::string& relay_help) {
  command.add_flag("--relay", args.relay, relay_help);
  command.add_option("--relays", args.relays,
                     "only these GPUs outside --gpus may forward (names or indices, e.g. 2,3; implies --relay): the "
                     "idle GPUs a tenant may borrow");
}

std::vector<std::string> RelayArgs::gpus() const {
  return relays.empty() ? std::vector<std::string>{} : CLI::detail::split(relays, ',');
}

Topology resolve_topology(const TopologyArgs& args) {
  Topology t = load_topology(args.topology);
  if (args.gpus.empty()) return t;
  return select_gpus(t, parse_gpu_list(t, args.gpus));
}

CommunicatorOptions communicator_options(const TopologyArgs& topology, const std::string& devices) {
  CommunicatorOptions co;
  if (!topology.topology.empty()) co.topology = load_topology(topology.topology);
  if (!topology.gpus.empty()) co.gpus = CLI::detail::split(topology.gpus, ',');
  if (devices.empty()) return co;
  for (const std::string& d : CLI::detail::split(devices, ',')) {
    try {
      co.devices.push_back(std::stoi(d));
    } catch (const std::exception&) {
      throw Error(fmt::format("--devices '{}': expected CUDA device numbers such as 0,1", devices));
    }
  }
  return co;
}

Collective collective_option(const std::string& name) {
  const auto collective = parse_collective(name);
  if (!collective)
    throw Error(fmt::format("--collective '{}': expected broadcast, reduce, allreduce, allgather or reducescatter",
                            name));
  return *collective;
}

std::vector<Collective> collectives_option(const std::string& text) {
  if (text == "all")
    return {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
            Collective::reducescatter};
  std::vector<Collective> out;
  for (const std::string& name : CLI::detail::split(text, ',')) out.push_back(collective_option(name));
  return out;
}

DataType dtype_option(const std::string& name) {
  const auto dtype = parse_data_type(name);
  if (!dtype) throw Error(fmt::format("--dtype '{}': expected {}", name, data_type_choices()));
  return *dtype;
}

ReduceOp op_option(const std::string& name) {
  const auto op = parse_reduce_op(name);
  if (!op) throw Error(fmt::format("--op '{}': expected sum, prod, min, max or avg", name));
  return *op;
}

void write_output(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text << std::flush;
    return;
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw Error(fmt::format("cannot write '{}': check the directory exists and is writable", path));
    out << text;
    if (!out.flush()) throw Error(fmt::format("cannot write '{}': the disk may be full", path));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(fmt::format("cannot write '{}': renaming the temporary file failed", path));
  }
}

}  // namespace canopy::cli
