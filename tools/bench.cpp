// `canopy bench`: nccl-tests' table for Canopy's collectives on this machine's GPUs (and NCCL's beside them with
// --vs-nccl): size, count, type, time, algbw, busbw, #wrong. Needs GPUs; the topology is detected unless given.
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <optional>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "bench/harness/benchmark.hpp"
#include "bench/harness/exchange_calls.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "tools/bench_exchange.hpp"
#include "tools/bench_procs.hpp"
#include "bench/harness/rounds_text.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_bench_command(CLI::App& app) {
  struct Args {
    TopologyArgs topology;
    std::string devices;
    std::string collective = "all";
    std::string sizes = "8:1G";
    std::string dtype = "f32";
    std::string op = "sum";
    int root = 0;
    int iters = 20;
    int warmup = 5;
    int repeats = 5;
    int rounds = 0;  // 0: 5 with --vs-nccl, else 1
    double target = 1.0;
    bool vs_nccl = false;
    bool no_check = false;
    bool check = false;
    bool in_place = false;
    bool host_time = false;
    bool graph = false;
    std::string json;
    std::string algorithm;
    std::string chunk;
    int blocks = 0;
    int threads = 0;
    int procs = 0;
    std::string relays;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("bench", "time Canopy's collectives on this machine's GPUs (nccl-tests' table)");
  add_topology_args(*cmd, args->topology, /*positional=*/false, /*required=*/false);
  cmd->add_option("--devices", args->devices, "CUDA devices to use, e.g. 0,1 (default: as many as the ranks)");
  cmd->add_option("--relays", args->relays,
                  "GPUs of the topology outside --gpus that may forward for the ranks (Blink+, docs/relays.md), "
                  "e.g. 2,3; their forwarding runs on --devices (on one GPU: virtual GPUs)");
  cmd->add_option("--collective,-c", args->collective,
                  "all, or a list of broadcast reduce allreduce allgather reducescatter; or one of sendrecv alltoall "
                  "gather scatter alone (NCCL's point-to-point family: its own table)")
      ->capture_default_str();
  cmd->add_option("--algorithm,-a", args->algorithm,
                  "time a collective-algorithm program instead (canopy algo list, or MSCCL-IR XML), built for the "
                  "communicator's ranks; --vs-nccl times NCCL's collective of the program's goal");
  cmd->add_option("--sizes", args->sizes, "bytes: MIN:MAX (powers of 2), MIN:MAX:FACTOR, or a list 1K,1M,1G")
      ->capture_default_str();
  cmd->add_option("--dtype", args->dtype, "f32 f16 bf16 f64 i32 i64 u8 i8 u32 u64 f8e4m3 f8e5m2")
      ->capture_default_str();
  cmd->add_option("--op", args->op, "sum prod min max avg")->capture_default_str();
  cmd->add_option("--root", args->root, "root rank of broadcast, reduce, gather and scatter")->capture_default_str();
  cmd->add_option("--iters", args->iters, "timed launches per repeat")->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "untimed launches first")->capture_default_str();
  cmd->add_option("--repeats", args->repeats, "timed loops; the median is reported")->capture_default_str();
  cmd->add_flag("--vs-nccl", args->vs_nccl, "also time NCCL (loaded at run time: CANOPY_NCCL_LIBRARY or libnccl.so.2)");
  cmd->add_option("--rounds", args->rounds,
                  "rounds a size, each timing Canopy and NCCL, the first alternating by round and size; rows give the "
                  "rounds' medians, and with --vs-nccl the ratio's range and verdict (default: 5 with --vs-nccl, "
                  "else 1)");
  cmd->add_option("--target", args->target,
                  "the ratio (NCCL's time / Canopy's) each row is judged against over several rounds: met only "
                  "where the whole range clears it")
      ->capture_default_str();
  cmd->add_flag("--check", args->check, "check every output element (the default)");
  cmd->add_flag("--no-check", args->no_check, "skip the correctness run (#wrong shows -1)");
  cmd->add_flag("--in-place", args->in_place, "NCCL's in-place layouts instead of separate buffers");
  cmd->add_flag("--host-time", args->host_time,
                "also print host(us): the host's time per call while issuing them (near time(us): bound by the host), "
                "and the floor under it: an empty kernel's launch, timed the same way (JSON: host_us, launch_us)");
  cmd->add_flag("--graph", args->graph,
                "capture each loop's --iters calls into a CUDA graph once and time its replays, for Canopy and NCCL "
                "alike (nccl-tests' -G): calls without the host's launches; captured calls never take the copy "
                "engines or the host path");
  cmd->add_option("--procs", args->procs,
                  "one process per rank, N ranks (as torchrun runs programs): starts N copies of this command, or "
                  "joins the job a launcher (canopy run -n N) made; rows are the slowest process's");
  cmd->add_option("--json", args->json, "also write the rows as JSON to this file ('-' = stdout, table to stderr)");
  cmd->add_option("--chunk", args->chunk, "kernel chunk size (default: CANOPY_CHUNK or 256KiB)");
  cmd->add_option("--blocks", args->blocks, "thread blocks per rank (default: CANOPY_BLOCKS or 24)");
  cmd->add_option("--threads", args->threads, "threads per block (default: CANOPY_THREADS or 512)");
  cmd->footer(
      "Examples:\n"
      "  canopy bench                                        every collective, 8 B - 1 GiB, detected topology\n"
      "  canopy bench -c allreduce --sizes 1M:1G --vs-nccl   beside NCCL on the same GPUs and buffers\n"
      "  canopy bench -t dgx1-v100 -c allgather --sizes 1M   8 virtual ranks on the GPUs you have\n"
      "  canopy bench --json bench.json                      rows as JSON (docs/runtime.md, \"Bench JSON\")\n"
      "  canopy bench -a ring-allreduce --vs-nccl            a program (docs/algorithms.md) beside NCCL\n"
      "  canopy bench -t dgx1-v100 -c alltoall               the planned all-to-all (relayed routes)\n"
      "  canopy bench -t dgx1-p100 -g 0,1 --relays 2,3,4,5   GPUs 2-5 forward for ranks 0 and 1 (Blink+)\n"
      "  canopy bench --procs 2 -c sendrecv --vs-nccl        a ring of sends and receives beside NCCL's\n"
      "  canopy bench --sizes 8:64K --vs-nccl --graph        replays of captured calls, both libraries\n"
      "  canopy bench --procs 2 -c allreduce --vs-nccl       one process per rank, Canopy and NCCL alike\n"
      "Columns follow nccl-tests: size in bytes (allgather: output, reduce-scatter: input), count per rank,\n"
      "time in µs (median of --repeats loops of --iters launches, CUDA events, slowest GPU), algbw = size / time,\n"
      "busbw = algbw x 2(n-1)/n (allreduce), (n-1)/n (allgather, reduce-scatter, alltoall, gather, scatter),\n"
      "1 (broadcast, reduce, sendrecv). alltoall's size is a rank's send buffer, gather's the root's receive buffer,\n"
      "scatter's the root's send buffer; NCCL runs these four as one group of ncclSend and ncclRecv.\n"
      "#wrong counts output elements that differ from the host reference in a separate checked run.\n"
      "With --vs-nccl each size runs --rounds rounds (5), both libraries in each, the first alternating: times are\n"
      "medians, ratio = NCCL's time / Canopy's, range its extremes over the rounds, and vs --target says met only\n"
      "where the whole range clears the target.");
  cmd->callback([args] {
    BenchOptions o;
    // -c sendrecv|alltoall|gather|scatter: the calls that move blocks, each alone (bench/harness/exchange_bench.hpp).
    const std::optional<ExchangeCall> exchange = exchange_call_named(args->collective);
    if (!exchange)
      for (const char* name : {"sendrecv", "alltoall", "gather", "scatter"})
        if (args->collective.find(name) != std::string::npos)
          throw Error(fmt::format("--collective '{}': {} runs alone (-c {}), its own table", args->collective, name,
                                  name));
    if (exchange && !args->algorithm.empty())
      throw Error(fmt::format("-c {} times NCCL's {}; -a times a program: give one of them", args->collective,
                              args->collective));
    if (exchange && args->in_place)
      throw Error(fmt::format("--in-place: -c {} runs out of place (separate send and receive buffers)",
                              args->collective));
    if (exchange && args->graph)
      throw Error(fmt::format("--graph: -c {} is a group of sends and receives, which are not captured into CUDA "
                              "graphs yet; time it without --graph",
                              args->collective));
    o.collectives = collectives_option(exchange ? std::string("allreduce") : args->collective);
    o.sizes = parse_bench_sizes(args->sizes);
    o.dtype = dtype_option(args->dtype);
    o.op = op_option(args->op);
    o.root = args->root;
    if (args->iters < 1 || args->repeats < 1 || args->warmup < 0)
      throw Error("--iters and --repeats take at least 1, --warmup at least 0");
    if (args->rounds < 0)
      throw Error(fmt::format("--rounds {}: give 1 or more (5 or more to judge a ratio)", args->rounds));
    if (!(args->target > 0)) throw Error(fmt::format("--target {}: give a ratio above 0, e.g. 1.0", args->target));
    o.rounds = args->rounds > 0 ? args->rounds : args->vs_nccl ? 5 : 1;
    o.iters = args->iters;
    o.warmup = args->warmup;
    o.repeats = args->repeats;
    o.check = !args->no_check;
    o.in_place = args->in_place;
    o.graph = args->graph;
    o.launch_floor = args->host_time;

    CommunicatorOptions co = communicator_options(args->topology, args->devices);
    if (!args->chunk.empty()) co.chunk_bytes = parse_byte_size(args->chunk, "--chunk");
    if (args->blocks) co.blocks_per_rank = args->blocks;
    if (args->threads) co.threads_per_block = args->threads;
    if (!args->relays.empty()) {
      if (args->procs > 0) throw Error("--relays runs in one process (relay agents are not built): leave out --procs");
      co.relays = CLI::detail::split(args->relays, ',');
    }
    if (args->procs < 0) throw Error(fmt::format("--procs {}: give the number of processes, 1 or more", args->procs));
    int launched = 0;
    const std::unique_ptr<Communicator> comm = command_communicator(args->procs, co, &launched);
    if (!comm) {  // the launcher of --procs: its copies measured
      if (launched != 0) throw CLI::RuntimeError(launched);
      return;
    }

    if (!args->algorithm.empty()) {
      if (args->in_place) throw Error("--in-place: algorithm programs run out of place");
      o.program = std::make_shared<ProgramOutputs>(program_option(args->algorithm, comm->ranks()));
    }
    const std::unique_ptr<NcclBaseline> nccl = args->vs_nccl ? nccl_beside(*comm) : nullptr;
    const bool json_stdout = args->json == "-";
    // Every process of --procs measures (each row is agreed among them); the first one prints.
    const bool quiet = comm->multi_process() && comm->first_own_rank() != 0;
    std::FILE* null_table = quiet ? std::fopen("/dev/null", "w") : nullptr;
    std::FILE* table = quiet ? null_table : json_stdout ? stderr : stdout;
    if (!table) throw Error("cannot open /dev/null for a quiet process's table");
    const std::string where =
        comm->multi_process() ? fmt::format("{} processes", comm->devices())
                              : fmt::format("{} GPU{}", comm->devices(), comm->devices() == 1 ? "" : "s");
    fmt::print(table, "# canopy bench: topology {} ({}), {} ranks on {}\n", comm->topology().name(),
               comm->topology_source(), comm->ranks(), where);
    if (nccl)
      fmt::print(table, "{}", nccl_context_line(nccl->version(), nccl->path(), std::getenv("NCCL_NVLS_ENABLE")));
    fmt::print(table, "# {} iters x {} repeats (median), {} warm-up{}; {}{}\n", o.iters, o.repeats, o.warmup,
               o.rounds > 1 ? fmt::format(", {} rounds", o.rounds) : "", o.check ? "outputs checked" : "not checked",
               o.graph ? fmt::format("; CUDA graphs: each repeat replays {} captured calls", o.iters) : "");
    if (nccl) fmt::print(table, "{}", rounds_header(o.rounds, args->target));
    // After the rows, either way: the JSON (what was measured, also when a call failed), then the exit's verdict.
    auto finish = [&](const std::vector<BenchRow>& rows, const Status& s) {
      if (null_table) std::fclose(null_table);
      if (!args->json.empty() && !quiet) write_output(args->json, bench_rows_json(rows));
      if (!s.ok()) throw Error(s.message());
      std::int64_t wrong = 0;
      for (const BenchRow& r : rows) wrong += std::max<std::int64_t>(r.errors, 0);
      if (wrong > 0) throw Error(fmt::format("{} output elements were wrong (see #wrong)", wrong));
    };
    if (exchange) {
      ExchangeBenchOptions x;
      x.call = *exchange;
      x.sizes = o.sizes;
      x.dtype = o.dtype;
      x.root = o.root;
      x.iters = o.iters;
      x.warmup = o.warmup;
      x.repeats = o.repeats;
      x.rounds = o.rounds;
      x.check = o.check;
      std::vector<BenchRow> rows;
      const Status s = print_exchange_bench(*comm, x, nccl.get(), args->host_time, args->target, table, &rows);
      return finish(rows, s);
    }
    Collective current{};
    bool first = true;
    std::vector<BenchRow> rows;
    const Status s = run_benchmark(*comm, o, nccl.get(), [&](const BenchRow& r) {
      if (first && r.launch_us > 0)
        fmt::print(table, "# host: an empty kernel's launch takes {:.2f} us per call, timed as the rows{}: the floor "
                          "under host(us)\n",
                   r.launch_us, comm->multi_process() ? " (the slowest process)" : "");
      if (first || r.collective != current) {
        auto describe = [&](bool large, bool huge) {
          CollectiveInfo info;
          CollectiveSpec spec{r.collective, o.dtype, o.op, o.root, large};
          spec.huge = huge;
          if (o.program) spec.program = std::shared_ptr<const algo::Program>(o.program, &o.program->program);
          const Status i = comm->info(spec, &info);
          const std::size_t trees = info.plan.trees.size();
          std::string notes =
              info.options.pull != PullEdges::none ? ", pulled edges " + to_string(info.options.pull) : "";
          // Across processes a planned kernel either runs on the staging area or touches only its own buffers.
          if (comm->multi_process() && !o.program)
            notes += info.options.own_buffers_only ? ", own buffers only (every edge through FIFOs, not staged)"
                                                   : ", through the staging area";
          const std::string what =
              o.program ? std::string("program") : fmt::format("{} tree{}", trees, trees == 1 ? "" : "s");
          return i.ok() ? fmt::format("{}, chunk {}, {} threads x {} blocks per GPU{}", what,
                                      format_byte_size(info.options.chunk_bytes), info.options.threads_per_block,
                                      fmt::join(info.blocks_per_device, "/"), notes)
                        : i.message();
        };
        // Only the kernels this run's sizes use (describing one compiles it).
        bool small = false, large = false, huge = false, low_latency = false;
        auto classify = [&](bool is_large, bool is_huge) { (is_huge ? huge : is_large ? large : small) = true; };
        std::uint64_t ll_up_to = 0, two_shot_from = 0, ll128_from = 0, ll128_to = 0, direct_from = 0, direct_to = 0,
                      direct_two_shot_from = 0, staged_from = 0, engines_from = 0;
        double least_share = 1, most_share = 0;
        for (std::uint64_t bytes : o.sizes)
          if (o.program) {
            if (const std::uint64_t count = bench_count(o.program->program, bytes, o.dtype); count > 0)
              classify(comm->is_large(o.program->program, count, o.dtype),
                       comm->is_huge(o.program->program, count, o.dtype));
          } else if (const std::uint64_t count = bench_count(r.collective, bytes, o.dtype, comm->ranks()); count > 0) {
            if (comm->is_low_latency(r.collective, count, o.dtype)) {
              low_latency = true;
              ll_up_to = std::max(ll_up_to, bytes);
              if (comm->is_two_shot(r.collective, count, o.dtype))
                two_shot_from = two_shot_from ? std::min(two_shot_from, bytes) : bytes;
            } else if (comm->is_ll128(r.collective, count, o.dtype)) {
              ll128_from = ll128_from ? std::min(ll128_from, bytes) : bytes;
              ll128_to = std::max(ll128_to, bytes);
            } else if (comm->is_direct(r.collective, count, o.dtype, o.in_place)) {
              direct_from = direct_from ? std::min(direct_from, bytes) : bytes;
              direct_to = std::max(direct_to, bytes);
              if (comm->is_two_shot(r.collective, count, o.dtype, o.in_place))
                direct_two_shot_from = direct_two_shot_from ? std::min(direct_two_shot_from, bytes) : bytes;
            } else if (!o.graph && comm->is_copy_engine(r.collective, count, o.dtype) &&
                       !(o.in_place && r.collective != Collective::broadcast)) {  // in place: the trees
              engines_from = engines_from ? std::min(engines_from, bytes) : bytes;
            } else {
              classify(comm->is_large(r.collective, count, o.dtype), comm->is_huge(r.collective, count, o.dtype));
            }
            if (const std::uint64_t staged = o.graph ? 0 : comm->staged_count(r.collective, count, o.dtype, o.root);
                staged > 0) {
              staged_from = staged_from ? std::min(staged_from, bytes) : bytes;
              const double share = static_cast<double>(staged) / static_cast<double>(count);
              least_share = std::min(least_share, share);
              most_share = std::max(most_share, share);
            }
          }
        std::vector<std::string> kernels;
        if (low_latency)
          kernels.push_back(
              fmt::format("up to {}: low-latency protocol, one launch{}", bench_size_text(ll_up_to),
                          two_shot_from ? fmt::format(" (two-shot from {})", bench_size_text(two_shot_from)) : ""));
        if (ll128_to > 0)
          kernels.push_back(fmt::format("{} to {}: LL128 protocol, one launch, 128-byte lines",
                                        bench_size_text(ll128_from), bench_size_text(ll128_to)));
        if (direct_to > 0)
          kernels.push_back(fmt::format(
              "{} to {}: direct protocol, one launch, {}{}", bench_size_text(direct_from), bench_size_text(direct_to),
              comm->on_peer_buffers() ? "the other process's buffer read (allgather: written) in place, mapped "
                                        "(the inbox kernels where a buffer cannot be shared)"
              : comm->on_own_buffers()  ? "inputs stored into the peers' inboxes (not staged)"
              : comm->multi_process() ? "peers' staging areas read in place (the inputs copied in)"
                                      : "peers' buffers read in place",
              direct_two_shot_from ? fmt::format(" (two-shot from {})", bench_size_text(direct_two_shot_from)) : ""));
        if (small) kernels.push_back(describe(false, false));
        if (large) kernels.push_back("large messages: " + describe(true, false));
        if (huge) kernels.push_back("huge messages: " + describe(true, true));
        if (engines_from > 0)
          kernels.push_back(fmt::format("from {}: copy engines over NVLink (cudaMemcpyAsync between the GPUs){}",
                                        bench_size_text(engines_from),
                                        r.collective == Collective::broadcast ? ""
                                        : r.collective == Collective::reduce  ? ", a combining kernel per chunk"
                                                                              : ", a combining kernel per half-chunk"));
        if (staged_from > 0)
          kernels.push_back(fmt::format("from {}: {} of the bytes through pinned host memory (PCIe copy engines) "
                                        "beside the kernels",
                                        bench_size_text(staged_from),
                                        most_share - least_share < 0.0005
                                            ? fmt::format("{:.1f}%", 100 * most_share)
                                            : fmt::format("{:.1f}–{:.1f}%", 100 * least_share, 100 * most_share)));
        const std::string title =
            o.program ? fmt::format("algorithm {} ({})", o.program->program.name(), o.program->program.goal())
                      : to_string(r.collective);
        fmt::print(table, "\n# {}: {}\n", title, fmt::join(kernels, "; "));
        fmt::print(table, "{:>12} {:>12} {:>6} {:>6} {:>10} {:>8} {:>8} {:>7}", "size", "count", "type", "redop",
                   "time(us)", "algbw", "busbw", "#wrong");
        if (args->host_time) fmt::print(table, " {:>8}", "host(us)");
        if (nccl) fmt::print(table, "{}", nccl_column_titles(o.rounds, args->target));
        fmt::print(table, "\n");
        current = r.collective;
        first = false;
      }
      fmt::print(table, "{:>12} {:>12} {:>6} {:>6} {:>10.2f} {:>8.2f} {:>8.2f} {:>7}", bench_size_text(r.bytes),
                 r.count, to_string(r.dtype),
                 (o.program ? o.program->program.reduces() : reduces(r.collective)) ? to_string(r.op) : "none",
                 r.time_us, r.algbw_gbps, r.busbw_gbps, r.errors < 0 ? std::string("n/a") : std::to_string(r.errors));
      if (args->host_time) fmt::print(table, " {:>8.2f}", r.host_us);
      // n/a: a program whose goal NCCL has no collective for (alltoall, custom)
      if (nccl) fmt::print(table, "{}", nccl_columns(r, args->target));
      fmt::print(table, "\n");
      std::fflush(table);
      rows.push_back(r);
    });
    finish(rows, s);
  });
}

}  // namespace canopy::cli
