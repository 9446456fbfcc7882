// `canopy tune`: chunk-size tuning on this machine's GPUs (Blink's run-time tuning). For each collective and size it
// starts from the simulator's predicted chunk, measures, doubles (or halves) while that helps and refines by a
// quarter (runtime/tune/chunk_tuner.hpp), checks the chosen kernel's output, prints every step, and remembers the choice
// in tuning.json beside the kernel cache, where every later Communicator on this machine finds it. With --protocols
// it chooses the protocol limits instead (tune_protocols.hpp); with --vs-nccl, per size, Canopy's kernels or the real
// NCCL for libcanopy_nccl.so (tune_library.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "simulator/simulate.hpp"
#include "bench/harness/benchmark.hpp"
#include "runtime/tune/chunk_tuner.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/tune/tuning_file.hpp"
#include "tools/commands.hpp"
#include "tools/tune_library.hpp"
#include "tools/tune_protocols.hpp"

namespace canopy::cli {

void add_tune_command(CLI::App& app) {
  struct Args {
    TopologyArgs topology;
    std::string devices;
    std::string collective = "allreduce";
    std::string sizes = "1M:1G:4";
    std::string dtype = "f32";
    std::string op = "sum";
    int iters = 10;
    int warmup = 3;
    int repeats = 3;
    bool dry_run = false;
    bool protocols = false;
    bool vs_nccl = false;
    int procs = 0;
    int rounds = 5;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "find the fastest chunk size (or, with --protocols, protocol) per collective and size, and remember it");
  add_topology_args(*cmd, args->topology, /*positional=*/false, /*required=*/false);
  cmd->add_option("--devices", args->devices, "CUDA devices to use, e.g. 0,1 (default: as many as the ranks)");
  CLI::Option* collective_option_given =
      cmd->add_option("--collective,-c", args->collective,
                      "all, or a list of broadcast reduce allreduce allgather reducescatter (--protocols: all)")
          ->capture_default_str();
  CLI::Option* sizes_given =
      cmd->add_option("--sizes", args->sizes,
                      "bytes: MIN:MAX (powers of 2), MIN:MAX:FACTOR, or a list 1M,16M (--protocols: 8:64M)")
          ->capture_default_str();
  cmd->add_option("--dtype", args->dtype, "f32 f16 bf16 f64 i32 i64 u8 i8 u32 u64 f8e4m3 f8e5m2")
      ->capture_default_str();
  cmd->add_option("--op", args->op, "sum prod min max avg")->capture_default_str();
  cmd->add_option("--iters", args->iters, "timed calls per repeat")->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "untimed calls first")->capture_default_str();
  cmd->add_option("--repeats", args->repeats, "timed loops; the median counts")->capture_default_str();
  cmd->add_flag("--dry-run", args->dry_run, "measure and print, but do not write tuning.json");
  cmd->add_flag("--protocols", args->protocols,
                "choose per collective up to which size the LL, LL128 and direct protocols take calls, from each "
                "one's time at every size");
  cmd->add_flag("--vs-nccl", args->vs_nccl,
                "choose per collective, type and size between Canopy's kernels and the real NCCL beside them: the "
                "faster median of --rounds rounds (the first alternating) serves those calls through "
                "libcanopy_nccl.so");
  cmd->add_option("--rounds", args->rounds, "--vs-nccl: rounds a size, each timing both libraries")
      ->capture_default_str();
  cmd->add_option("--procs", args->procs,
                  "--vs-nccl: one process per rank, N ranks, as the job runs (torchrun), so that the choices are "
                  "keyed to the job's machine");
  cmd->footer(
      "Examples:\n"
      "  canopy tune                                   allreduce, 1 MiB - 1 GiB, this machine's GPUs\n"
      "  canopy tune -c allreduce,allgather --sizes 1M,16M,256M\n"
      "Each size's bucket (the power of two at or below it) gets the fastest chunk; sizes the low-latency or direct\n"
      "protocol runs are skipped. Calls of that collective, element type and bucket then use it (CANOPY_LOG=info says "
      "so);\n"
      "CANOPY_CHUNK overrides it. The file is $CANOPY_CACHE_DIR/tuning.json (see `canopy cache info`).\n"
      "\n"
      "  canopy tune --protocols                       every collective, 8 B - 64 MiB: which protocol up to where\n"
      "  canopy tune --protocols -c allreduce --sizes 64K:16M --dry-run\n"
      "--protocols times the low-latency (LL), LL128, direct and planned (trees, copy engines) kernels at every size\n"
      "each can take, chooses per collective the limits (LL up to A, LL128 up to B, direct up to C, then planned)\n"
      "whose times summed over the sizes, each over that size's fastest, are least, and keeps the untuned limits\n"
      "unless the sizes it moves to another protocol gain more than 5% each on average, timed again before they\n"
      "count. The chosen kernels' output is checked. Communicators of this machine then use the limits unless\n"
      "CANOPY_LL_BYTES, CANOPY_LL128_BYTES or CANOPY_DIRECT_BYTES is set.\n"
      "\n"
      "  canopy tune --vs-nccl --procs 4 -c all --sizes 8:1G   per size: Canopy's kernels or the real NCCL\n"
      "--vs-nccl times both libraries as `canopy bench --vs-nccl` does and records the faster median per collective,\n"
      "type and size bucket with both spreads; libcanopy_nccl.so then serves each call by it where a real NCCL\n"
      "communicator exists beside Canopy's (CANOPY_LOG=info names the choice and the file). Untuned sizes take\n"
      "Canopy's kernels. CANOPY_TUNING=FILE reads and writes another file than tuning.json (one per machine kind).");
  cmd->callback([args, collective_option_given, sizes_given] {
    const bool protocols = args->protocols;
    const std::vector<Collective> collectives =
        collectives_option(protocols && collective_option_given->count() == 0 ? "all" : args->collective);
    const std::vector<std::uint64_t> sizes =
        parse_bench_sizes(protocols && sizes_given->count() == 0 ? "8:64M" : args->sizes);
    const DataType dtype = dtype_option(args->dtype);
    const ReduceOp op = op_option(args->op);
    if (args->iters < 1 || args->repeats < 1 || args->warmup < 0)
      throw Error("--iters and --repeats take at least 1, --warmup at least 0");
    const CommunicatorOptions co = communicator_options(args->topology, args->devices);
    if (args->vs_nccl && protocols) throw Error("--vs-nccl and --protocols choose different things: give one");
    if (!args->vs_nccl && args->procs != 0)
      throw Error("--procs goes with --vs-nccl (the choices of a job's processes)");
    if (args->vs_nccl) {
      if (args->rounds < 1) throw Error(fmt::format("--rounds {}: give 1 or more (5 or more to judge)", args->rounds));
      if (args->procs < 0) throw Error(fmt::format("--procs {}: give the number of processes", args->procs));
      tune_library(LibraryTuneRequest{co, args->procs, collectives, sizes, dtype, op, args->warmup, args->iters,
                                      args->repeats, args->rounds, args->dry_run});
      return;
    }
    if (protocols) {
      std::vector<std::uint64_t> ascending = sizes;
      std::sort(ascending.begin(), ascending.end());
      ascending.erase(std::unique(ascending.begin(), ascending.end()), ascending.end());
      tune_protocols(ProtocolTuneRequest{co, collectives, ascending, dtype, op, args->warmup, args->iters,
                                         args->repeats, args->dry_run});
      return;
    }
    std::unique_ptr<Communicator> comm;
    if (Status s = Communicator::create(co, &comm); !s.ok()) throw Error(s.message());
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, comm->device_ordinals()[0]) != cudaSuccess)
      throw Error("cudaGetDeviceProperties failed on the first GPU");
    Jit jit(DiskCache::from_environment());
    PatternKernels patterns(jit, fmt::format("sm_{}{}", prop.major, prop.minor));
    std::uint64_t top = 0;
    for (std::uint64_t s : sizes) top = std::max(top, s);
    std::unique_ptr<CollectiveBuffers> buffers;
    if (Status s = CollectiveBuffers::create(*comm, top, top, patterns, &buffers); !s.ok()) throw Error(s.message());
    TuningFile file(comm->tuning_path());
    fmt::print("# canopy tune: topology {} ({}), {} ranks on {} GPUs, {}; results to {}\n", comm->topology().name(),
               comm->topology_source(), comm->ranks(), comm->devices(), to_string(dtype),
               args->dry_run ? "nowhere (--dry-run)" : comm->tuning_path().string());
    const SimOptions sim;  // launch cost and per-chunk cost as docs/simulator.md calibrates them by default
    for (Collective c : collectives)
      for (std::uint64_t bytes : sizes) {
        const std::uint64_t count = bench_count(c, bytes, dtype, comm->ranks());
        if (count == 0 || comm->protocol(c, count, dtype) != Protocol::planned || comm->is_copy_engine(c, count, dtype))
          continue;
        // The simulator's best chunk for the whole pipeline, spread over the blocks that run it.
        CollectiveInfo info;
        CollectiveSpec kind{c, dtype, op, 0, comm->is_large(c, count, dtype)};
        kind.huge = comm->is_huge(c, count, dtype);
        if (Status s = comm->info(kind, &info); !s.ok()) throw Error(s.message());
        const SimResult predicted = best_chunk(
            [&](const SimOptions& o) { return simulate_plan(comm->topology(), info.plan, bytes, o); }, sim,
            static_cast<std::int64_t>(bytes));
        const std::int64_t per_block = std::max<std::int64_t>(
            1, info.options.blocks_per_rank / std::max<std::int64_t>(1, static_cast<std::int64_t>(info.plan.trees.size())));
        const std::int64_t start = std::clamp<std::int64_t>(predicted.chunk_bytes / per_block / 16 * 16, 1024, 16 << 20);
        CheckSpec spec{c, dtype, op, 0, comm->ranks(), count, 0x7e57u + bytes};
        CollectiveCall call;
        if (Status s = buffers->set_up(spec, false, &call); !s.ok()) throw Error(s.message());
        auto measure = [&](std::int64_t chunk) {
          call.chunk_bytes = chunk;
          double us = 0;
          if (Status s = time_call(*comm, buffers->streams(), call, args->warmup, args->iters, args->repeats, &us); !s.ok())
            throw Error(s.message());
          return us;
        };
        const double default_us = measure(info.options.chunk_bytes);
        const ChunkTuneResult r = tune_chunk(start, measure);
        const ChunkTuneStep chosen = choose_over_incumbent(r, {info.options.chunk_bytes, default_us}, ChunkTuneLimits{}.gain);
        std::vector<std::string> steps;
        for (const ChunkTuneStep& t : r.tried)
          steps.push_back(fmt::format("{} {:.1f}us", format_byte_size(t.chunk_bytes), t.time_us));
        // The chosen kernel must still be right (set_up rewrites the inputs and poisons the outputs).
        if (Status s = buffers->set_up(spec, false, &call); !s.ok()) throw Error(s.message());
        call.chunk_bytes = chosen.chunk_bytes;
        CheckResult checked;
        if (Status s = comm->run(call); !s.ok()) throw Error(s.message());
        if (Status s = buffers->check(spec, call, &checked); !s.ok()) throw Error(s.message());
        if (checked.wrong > 0)
          throw Error(fmt::format("{} {}: chunk {} gave {} wrong elements ({}); nothing was written",
                                  to_string(c), bench_size_text(bytes), format_byte_size(chosen.chunk_bytes),
                                  checked.wrong, checked.examples.empty() ? "" : checked.examples[0]));
        fmt::print("{:<14} {:>6}: predicted {} -> {}: chose {} ({:.1f} us; default {} {:.1f} us, {:.2f}x)\n",
                   to_string(c), bench_size_text(bytes), format_byte_size(start), fmt::join(steps, ", "),
                   format_byte_size(chosen.chunk_bytes), chosen.time_us, format_byte_size(info.options.chunk_bytes),
                   default_us, default_us / chosen.time_us);
        file.set({comm->machine_key(), c, dtype, tuning_bucket(bytes)},
                 {comm->topology().name(), chosen.chunk_bytes, chosen.time_us, default_us});
      }
    if (!args->dry_run) {
      file.save();
      fmt::print("# wrote {} ({} entries)\n", file.path().string(), file.entries().size());
    }
  });
}

}  // namespace canopy::cli
