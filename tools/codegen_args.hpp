// The options `canopy gen` and `canopy compile` share: where the plan comes from (topology + collective, or a plan
// JSON file) or which collective-algorithm program runs instead (--algorithm NAME|FILE.xml --ranks N), and what the
// kernels are specialised for (dtype, op, chunk, FIFO depth, blocks, threads, devices).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "codegen/kernel_source.hpp"
#include "codegen/schedule.hpp"
#include "planner/plan.hpp"
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
  int blocks = 24;
  int threads = 512;
  int devices = 0;  // 0: one rank per device
};

void add_codegen_args(CLI::App& command, CodegenArgs& args);

struct Generated {
  Plan plan;  // a program's: only the topology and rank names
  std::optional<algo::Program> program;
  Schedule schedule;
  KernelSource source;
};
// Plans (or reads the plan file), lowers, emits and formats; throws canopy::Error naming the bad option.
Generated generate_from_args(const CodegenArgs& args);

}  // namespace canopy::cli
