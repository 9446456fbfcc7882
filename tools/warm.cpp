// `canopy warm`: precompiles into the disk cache the kernels a job will meet, so that its first step only loads them
// (NVRTC takes hundreds of milliseconds a kernel, cold). For each collective, type and size it asks the communicator
// which kernel a call would run (Communicator::spec_of: protocol, message class, chunk), keeps the distinct ones and
// prepares them at once (NVRTC on a thread per core), then says what each one is and where it came from. Make the
// communicator as the job does (the same machine, GPUs, --procs for one process per rank, and settings), or the
// kernels are others.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "bench/harness/benchmark.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/jit/disk_cache.hpp"
#include "tools/bench_procs.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_warm_command(CLI::App& app) {
  struct Args {
    TopologyArgs topology;
    std::string devices;
    std::string collective = "all";
    std::string sizes = "8:1G";
    std::string dtypes = "f32,bf16";
    std::string op = "sum";
    int procs = 0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("warm", "precompile the kernels a job will meet into the disk cache, so its first step only "
                                 "loads them");
  add_topology_args(*cmd, args->topology, /*positional=*/false, /*required=*/false);
  cmd->add_option("--devices", args->devices, "CUDA devices to use, e.g. 0,1 (default: as many as the ranks)");
  cmd->add_option("--collective,-c", args->collective, "all, or a list of broadcast reduce allreduce allgather "
                                                       "reducescatter")
      ->capture_default_str();
  cmd->add_option("--sizes", args->sizes, "bytes the job's calls take: MIN:MAX (powers of 2), MIN:MAX:FACTOR, or a "
                                          "list")
      ->capture_default_str();
  cmd->add_option("--dtype", args->dtypes, "element types, a list: f32 f16 bf16 f64 i32 i64 u8 i8 u32 u64 f8e4m3 f8e5m2")
      ->capture_default_str();
  cmd->add_option("--op", args->op, "sum prod min max avg")->capture_default_str();
  cmd->add_option("--procs", args->procs,
                  "one process per rank, N ranks, as torchrun runs the job (its kernels differ from one process's)");
  cmd->footer(
      "Examples:\n"
      "  canopy warm                                    every collective, f32 and bf16, 8 B - 1 GiB, this machine\n"
      "  canopy warm --procs 8 -c allreduce,allgather,reducescatter --dtype bf16   a DDP/FSDP job's, one process a GPU\n"
      "  canopy warm -t dgx1-v100 --devices 0 -c allreduce --sizes 1M:256M\n"
      "Each (collective, type, size) is mapped to the kernel a call of it runs (its protocol, message class and tuned\n"
      "chunk); the distinct kernels are compiled at once, one NVRTC thread per core, into $CANOPY_CACHE_DIR (see\n"
      "`canopy cache info`), where every later process of this machine loads them. Run it with the job's settings\n"
      "(CANOPY_* variables, --procs): other settings make other kernels.");
  cmd->callback([args] {
    const std::vector<Collective> collectives = collectives_option(args->collective);
    const std::vector<std::uint64_t> sizes = parse_bench_sizes(args->sizes);
    std::vector<DataType> dtypes;
    for (const std::string& name : CLI::detail::split(args->dtypes, ','))
      if (!name.empty()) dtypes.push_back(dtype_option(name));
    if (dtypes.empty()) throw Error("--dtype: give at least one element type, e.g. f32,bf16");
    const ReduceOp op = op_option(args->op);
    if (args->procs < 0) throw Error(fmt::format("--procs {}: give the number of processes, 1 or more", args->procs));
    const CommunicatorOptions co = communicator_options(args->topology, args->devices);
    int launched = 0;
    const std::unique_ptr<Communicator> comm = command_communicator(args->procs, co, &launched);
    if (!comm) {  // the launcher of --procs: its copies compiled
      if (launched != 0) throw CLI::RuntimeError(launched);
      return;
    }
    const bool speaks = !comm->multi_process() || comm->first_own_rank() == 0;
    std::vector<CollectiveSpec> specs;
    for (Collective c : collectives)
      for (DataType t : dtypes)
        for (std::uint64_t bytes : sizes) {
          const std::uint64_t count = bench_count(c, bytes, t, comm->ranks());
          if (count == 0) continue;
          const CollectiveSpec s = comm->spec_of(c, count, t, op, 0);
          if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
        }
    if (speaks)
      fmt::print("# canopy warm: topology {} ({}), {} ranks; {} kernels for {} collectives x {} types x {} sizes\n",
                 comm->topology().name(), comm->topology_source(), comm->ranks(), specs.size(), collectives.size(),
                 dtypes.size(), sizes.size());
    const auto start = std::chrono::steady_clock::now();
    if (Status s = comm->prepare(specs); !s.ok()) throw Error(s.message());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    int compiled = 0;
    for (const CollectiveSpec& s : specs) {
      CollectiveInfo info;
      if (Status i = comm->info(s, &info); !i.ok()) throw Error(i.message());
      compiled += info.outcome == CacheOutcome::compiled ? 1 : 0;
      if (speaks) fmt::print("  {:<48} {:<11} {}\n", spec_text(s), to_string(info.outcome), info.kernel);
    }
    if (speaks)
      fmt::print("# {} compiled, {} already in the cache ({}), in {:.1f} s ({} NVRTC threads)\n", compiled,
                 static_cast<int>(specs.size()) - compiled, DiskCache::from_environment().directory().string(), seconds,
                 std::max(1u, std::thread::hardware_concurrency()));
  });
}

}  // namespace canopy::cli
