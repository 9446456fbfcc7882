// `canopy gen`: the kernel pipeline up to the CUDA source (plan -> schedule -> source, nothing compiled); writes the
// source, the plan JSON and a manifest, or prints.
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "codegen/generate.hpp"
#include "core/error.hpp"
#include "dsl/msccl_xml.hpp"
#include "planner/plan_json.hpp"
#include "tools/codegen_args.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_gen_command(CLI::App& app) {
  struct Args {
    CodegenArgs codegen;
    std::string out;
    bool print = false;
    bool schedule = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "gen", "generate the specialised CUDA source of a collective's plan or of a collective-algorithm program");
  add_codegen_args(*cmd, args->codegen);
  cmd->add_option(
      "--out,-o", args->out,
      "write NAME.cu, plan.json (a program's: program.xml, MSCCL-IR) and manifest.json into this directory");
  cmd->add_flag("--print", args->print, "print the CUDA source to stdout");
  cmd->add_flag("--schedule", args->schedule, "print the per-GPU schedule (the IR the source is emitted from)");
  cmd->footer(
      "Examples:\n"
      "  canopy gen -t dgx1-v100 -c allreduce --print | less\n"
      "  canopy gen -t hgx-h200 -c allgather --dtype bf16 --chunk 1MiB --out kernels/\n"
      "  canopy gen -t dgx1-v100 -c allreduce --devices 1 --schedule     8 virtual ranks on one GPU\n"
      "  canopy plan -t h200x2 -c allreduce --json > p.json && canopy gen --plan p.json --out k/\n"
      "  canopy gen --algorithm ring-allreduce -t h200x2 --print        a program (canopy algo list) instead of trees\n"
      "  canopy gen -a two-step-alltoall -n 16 -t dgx1-v100-x2 --schedule\n"
      "  canopy gen -a my_algo.xml --out k/                              MSCCL-IR XML (msccl-tools' output)\n"
      "The source names every tree, lane, counter and FIFO it uses; docs/codegen.md explains the protocol, and\n"
      "docs/algorithms.md how programs are lowered.");
  cmd->callback([args] {
    if (args->out.empty() && !args->print && !args->schedule)
      throw Error("say where the source goes: --out DIR, --print or --schedule");
    CodegenRequest request;
    read_codegen_request(args->codegen, &request);
    const BuiltKernel built = build_kernel(request.kernel, nullptr);
    const BuiltCollective& g = *built.builds.front();
    if (args->schedule) fmt::print("{}", g.schedule.dump());
    if (args->print) fmt::print("{}", g.source.file.text);
    if (!args->out.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(args->out, ec);
      if (ec) throw Error(fmt::format("cannot create output directory '{}': {}", args->out, ec.message()));
      const std::filesystem::path dir(args->out);
      write_output((dir / g.source.file.name).string(), g.source.file.text);
      const std::string what = request.program ? "program.xml" : "plan.json";
      write_output((dir / what).string(),
                   request.program ? algo::to_msccl_xml(*request.program) : plan_to_json(g.plan));
      write_output((dir / "manifest.json").string(), manifest_json(g.source, g.schedule));
      fmt::print(stderr, "wrote {}, {} and manifest.json to {}\n", g.source.file.name, what, args->out);
    }
  });
}

}  // namespace canopy::cli
