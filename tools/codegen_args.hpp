// The options `canopy gen` and `canopy compile` share: where the plan comes from (topology + collective, or a plan
// JSON file) or which collective-algorithm program runs instead (--algorithm NAME|FILE.xml --ranks N), and what the
// kernels are specialised for (dtype, op, chunk, FIFO depth, blocks, threads, devices); read into a request for the
// kernel pipeline (runtime/jit/build.hpp), which both commands run.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "dsl/algorithm.hpp"
#include "topology/topology.hpp"
#include "runtime/jit/build.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

struct CodegenArgs {
  TopologyArgs topology;
  std::string collective;
  std::string root;
  std::string plan_file;
  std::string algorithm;  // a shipped algorithm or MSCCL-IR XML: generate from the program instead of trees
  int ranks = 0;          // the program's ranks (0: the topology's GPUs, else 8)
  std::string dtype = "f32";
  std::string op = "sum";
  std::string chunk = "256KiB";
  int fifo_depth = 4;
  std::string pull = "auto";
  bool own_buffers = false;  // CodegenOptions::own_buffers_only
  RelayArgs relay;           // plan with GPUs outside --gpus forwarding (Blink+): CodegenOptions::relay_gpus
  int blocks = 24;
  int threads = 512;
  int devices = 0;  // 0: one rank per device
};

void add_codegen_args(CLI::App& command, CodegenArgs& args);

// What the options ask the kernel pipeline for: the plan (planned here, or read from --plan) or the program and the
// topology its ranks run on, and the shape. `kernel` points into the program and topology: a CodegenRequest stays
// where it was made.
struct CodegenRequest {
  std::optional<Topology> topology;
  std::optional<algo::Program> program;
  KernelRequest kernel;

  CodegenRequest() = default;
  CodegenRequest(const CodegenRequest&) = delete;
  CodegenRequest& operator=(const CodegenRequest&) = delete;
};
// Plans (or reads the plan file, or the program) and reads the shape; throws canopy::Error naming the bad option.
void read_codegen_request(const CodegenArgs& args, CodegenRequest* request);

}  // namespace canopy::cli
