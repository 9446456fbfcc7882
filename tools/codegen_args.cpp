// Shared options of `canopy gen` and `canopy compile`, read into the request both give the kernel pipeline.
#include "tools/codegen_args.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "codegen/lower.hpp"
#include "codegen/relay_memory.hpp"
#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "topology/topology_subset.hpp"
#include "planner/alltoall_program.hpp"
#include "planner/plan_json.hpp"
#include "planner/planner.hpp"
#include "planner/plan_eval.hpp"

namespace canopy::cli {

void add_codegen_args(CLI::App& cmd, CodegenArgs& args) {
  add_topology_args(cmd, args.topology, /*positional=*/false, /*required=*/false);
  cmd.add_option("--collective,-c", args.collective, "broadcast | reduce | allreduce | allgather | reducescatter | alltoall (planned routes as a program)");
  cmd.add_option("--root,-r", args.root, "root of broadcast or reduce (default: the first rank)");
  cmd.add_option("--plan", args.plan_file, "generate from this plan JSON (`canopy plan --json`) instead of planning");
  cmd.add_option("--algorithm,-a", args.algorithm,
                 "generate from a collective-algorithm program instead of trees: a shipped algorithm (canopy algo "
                 "list) or MSCCL-IR XML");
  cmd.add_option("--ranks,-n", args.ranks,
                 "ranks of --algorithm (default: the topology's GPUs; without --topology, 8 GPUs on one switch)");
  cmd.add_option("--dtype", args.dtype, "element type: f32 f16 bf16 f64 i32 i64 u8 i8 u32 u64 f8e4m3 f8e5m2")
      ->capture_default_str();
  cmd.add_option("--op", args.op, "reduction: sum prod min max")->capture_default_str();
  cmd.add_option("--chunk", args.chunk, "bytes a lane moves per pipeline step, e.g. 64KiB, 1MiB")
      ->capture_default_str();
  cmd.add_option("--fifo-depth", args.fifo_depth, "chunk slots per reduce edge")->capture_default_str();
  cmd.add_option("--pull", args.pull,
                 "edges whose receiver reads the sender's input directly: auto (reduce: in; else none) | none | "
                 "in (leaves of reduce-like trees) | out (root of broadcast-like trees) | all")
      ->capture_default_str();
  cmd.add_flag("--own-buffers", args.own_buffers,
               "each rank touches only its own send and receive buffers: every edge through the receiver's FIFO, "
               "none pulled (what a multi-process communicator runs by default, CANOPY_OWN_BUFFERS)");
  add_relay_args(cmd, args.relay,
                 "plan with the GPUs outside --gpus forwarding over their idle links (Blink+, `canopy plan --relay`): "
                 "their forwarding kernels are generated beside the ranks' (docs/codegen.md \"Relays\")");
  cmd.add_option("--blocks", args.blocks, "thread blocks per rank, shared among trees by fraction")
      ->capture_default_str();
  cmd.add_option("--threads", args.threads, "threads per block")->capture_default_str();
  cmd.add_option("--devices", args.devices,
                 "run the ranks on this many GPUs (virtual ranks, in blocks of ranks); default one rank per GPU");
}

namespace {
std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read plan file '{}': check the path", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The options that say what the kernels are specialised for, for `ranks` ranks.
CodegenOptions shape_options(const CodegenArgs& args, int ranks, const char* what) {
  CodegenOptions o;
  o.dtype = dtype_option(args.dtype);
  o.op = op_option(args.op);
  o.chunk_bytes = parse_byte_size(args.chunk, "--chunk");
  o.fifo_depth = args.fifo_depth;
  set_pull(o, args.pull, "--pull");
  if (args.own_buffers && args.pull != "auto" && args.pull != "none")
    throw Error(fmt::format("--own-buffers with --pull {}: a pulled edge reads the sender's buffer; leave out --pull",
                            args.pull));
  o.own_buffers_only = args.own_buffers;
  o.blocks_per_rank = args.blocks;
  o.threads_per_block = args.threads;
  if (args.devices < 0 || args.devices > ranks)
    throw Error(fmt::format("--devices {}: use 1 to {} ({})", args.devices, ranks, what));
  if (args.devices > 0) o.device_of_rank = block_placement(ranks, args.devices);
  return o;
}

// --algorithm: the program on the topology's (or a switch's) GPUs, lowered instead of planned.
void read_program(const CodegenArgs& args, CodegenRequest* r) {
  if (!args.collective.empty() || !args.plan_file.empty() || !args.root.empty())
    throw Error("--algorithm says what runs: leave out --collective, --root and --plan");
  if (args.pull != "auto") throw Error("--pull applies to planned trees; programs say what each rank reads and writes");
  if (args.own_buffers)
    throw Error("--own-buffers applies to planned trees; programs say what each rank reads and writes");
  std::vector<std::string> rank_names;
  if (!args.topology.topology.empty()) {
    r->topology = load_topology(args.topology.topology);
    const std::vector<NodeId> gpus =
        args.topology.gpus.empty() ? r->topology->gpu_ids() : parse_gpu_list(*r->topology, args.topology.gpus);
    for (NodeId id : gpus) rank_names.push_back(r->topology->node(id).name);
  }
  const int want = args.ranks > 0 ? args.ranks : r->topology ? static_cast<int>(rank_names.size()) : 0;
  r->program = program_option(args.algorithm, want);
  const int n = r->program->ranks();
  if (!r->topology) {
    r->topology = switch_topology(n);
  } else if (static_cast<int>(rank_names.size()) < n) {
    throw Error(fmt::format("{} runs {} ranks but {} offers {} GPUs{}: pass --ranks {} or a larger topology",
                            r->program->name(), n, r->topology->name(), rank_names.size(),
                            args.topology.gpus.empty() ? "" : " (--gpus)", rank_names.size()));
  }
  if (!rank_names.empty()) rank_names.resize(n);  // the program's ranks: the first n of the chosen GPUs
  r->kernel.shape = shape_options(args, n, "the program's rank count");
  r->kernel.input = RunProgram{&*r->program, &*r->topology, rank_names};
}

// -c alltoall: the planned all-to-all's routes as a program (planner/alltoall_program.hpp), lowered as programs are.
void read_planned_alltoall(const CodegenArgs& args, CodegenRequest* r) {
  if (!args.plan_file.empty()) throw Error("-c alltoall plans here: leave out --plan (it reads tree plans)");
  if (!args.root.empty()) throw Error("alltoall has no root: leave out --root");
  if (args.pull != "auto" || args.own_buffers)
    throw Error("--pull and --own-buffers apply to planned trees; the all-to-all's program says what each rank writes");
  r->topology = load_topology(args.topology.topology);
  PlanOptions options;
  if (!args.topology.gpus.empty()) options.gpus = CLI::detail::split(args.topology.gpus, ',');
  const AlltoallPlan plan = plan_alltoall(*r->topology, options);
  r->program = alltoall_program(*r->topology, plan);
  r->kernel.shape = shape_options(args, r->program->ranks(), "the all-to-all's rank count");
  r->kernel.input = RunProgram{&*r->program, &*r->topology, plan.ranks};
}
}  // namespace

void read_codegen_request(const CodegenArgs& args, CodegenRequest* r) {
  if (!args.algorithm.empty()) return read_program(args, r);
  if (args.collective == "alltoall") {
    if (args.ranks != 0) throw Error("--ranks sizes an --algorithm; the all-to-all runs on the topology's GPUs");
    if (args.topology.topology.empty()) throw Error("say where the all-to-all runs: --topology NAME");
    return read_planned_alltoall(args, r);
  }
  if (args.ranks != 0) throw Error("--ranks sizes an --algorithm; planned collectives run on the topology's GPUs");
  Plan p;
  std::vector<std::string> relays;
  if (!args.plan_file.empty()) {
    if (!args.topology.topology.empty() || !args.collective.empty())
      throw Error("--plan gives the whole plan: leave out --topology and --collective");
    if (args.relay.on())
      throw Error("--relay and --relays plan here; a plan file's paths already say which GPUs relay: leave them out");
    p = plan_from_json(read_file(args.plan_file), args.plan_file);
    // A plan made with --relay crosses GPUs that are not ranks: their forwarding is generated too. Which path nodes
    // are GPUs the plan's topology says (by name: a shipped topology or a .topo path).
    try {
      relays = relay_gpus_of(p, load_topology(p.topology));
    } catch (const Error&) {
      relays.clear();  // a topology this machine cannot load: its paths' nodes are taken as switches, as before
    }
  } else {
    if (args.topology.topology.empty() || args.collective.empty())
      throw Error("say what to generate: --topology NAME --collective NAME (or --plan FILE)");
    const Collective collective = collective_option(args.collective);
    PlanOptions options;
    if (!args.topology.gpus.empty()) options.gpus = CLI::detail::split(args.topology.gpus, ',');
    if (!args.root.empty()) options.root = args.root;
    options.relay = args.relay.on();
    options.relay_gpus = args.relay.gpus();
    const Topology topology = load_topology(args.topology.topology);
    p = plan(topology, collective, options);
    relays = relay_gpus_of(p, topology);
  }
  r->kernel.shape = shape_options(args, static_cast<int>(p.ranks.size()), "the plan's rank count");
  r->kernel.shape.relay_gpus = std::move(relays);
  // Relay GPUs belong to other tenants: their rings stay within CANOPY_RELAY_MEMORY (codegen/relay_memory.hpp).
  r->kernel.shape = fit_relay_memory(p, r->kernel.shape, relay_memory_cap_from_environment());
  r->kernel.input = std::move(p);
}

}  // namespace canopy::cli
