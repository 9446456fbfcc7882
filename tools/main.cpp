// The `canopy` command: parses the command line, runs one subcommand, and turns a canopy::Error into a message
// on stderr and exit status 1. Usage mistakes exit 2: an unknown subcommand or option (named, with the nearest valid
// one, even beside --help), a missing subcommand (the help and the list), a missing or malformed argument
// (tools/usage/command_line.hpp). `canopy run` exits with its failing rank's status; a broken invariant exits 3.
#include <fmt/format.h>

#include <iostream>

#include "core/error.hpp"
#include "core/version.hpp"
#include "tools/commands.hpp"
#include "tools/usage/command_line.hpp"

int main(int argc, char** argv) {
  CLI::App app{"canopy: fast GPU collectives on any interconnect topology, from spanning trees.\n"};
  app.name("canopy");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("canopy ") + canopy::library_version());
  app.footer(
      "Examples:\n"
      "  canopy topo list                          shipped topologies\n"
      "  canopy topo show dgx1-v100                nodes, links and bandwidth totals\n"
      "  canopy topo show dgx1-v100 --gpus 0,1,5   a tenant's 3-GPU slice\n"
      "  canopy topo check my-cluster.topo         validate your own description\n"
      "  canopy topo dot dgx1-v100 --svg dgx1.svg  draw it (needs Graphviz)\n"
      "  canopy plan -t dgx1-v100 -c allreduce     optimal trees, bound, NCCL-style rings, link loads\n"
      "  canopy gen -t dgx1-v100 -c allreduce --print    the specialised CUDA kernels of that plan\n"
      "  canopy compile -t dgx1-v100 -c allreduce  compile them with NVRTC (cached on disk)\n"
      "  canopy cache info                         the kernel cache: where, how big\n"
      "  canopy detect --out mine.topo             this machine's GPUs as .topo (NVML + CUDA; --measure)\n"
      "  canopy topo import nccl.xml --out my.topo  NCCL's topology XML (NCCL_TOPO_FILE, a dump) as .topo\n"
      "  canopy bench -c allreduce --vs-nccl       time collectives on this machine's GPUs, beside NCCL\n"
      "  canopy run -n 2 -- ./my_program           one process per rank, with the bootstrap id in the environment\n"
      "  canopy warm --procs 8 --dtype bf16        precompile a job's kernels, so its first step only loads them\n"
      "  canopy nccl-tests-compare real.log canopy.log   NEW/BASE ratios of two nccl-tests runs (--bench: vs bench)\n"
      "  canopy bench-compare base.json new.json    NEW/BASE ratios of two canopy bench --json runs (an A/B)\n"
      "\n"
      "Run `canopy SUBCOMMAND --help` for details. Formats: docs/topology.md.\n"
      "\n"
      "Environment:\n"
      "  CANOPY_CACHE_DIR          compiled-kernel cache (else $XDG_CACHE_HOME/canopy, else ~/.cache/canopy)\n"
      "  CANOPY_CACHE_MAX_BYTES    the cache's size cap in bytes (default 1 GiB, least recently used go first)\n"
      "  CANOPY_ALWAYS_COMPILE=1   compile with NVRTC every time, bypassing the caches\n"
      "  CANOPY_LOG=info|debug     log each collective's plan, kernel shape and cache entry (CANOPY_LOG_SUBSYS=\n"
      "                            init,plan,jit,run,watchdog picks subsystems)\n"
      "  CANOPY_CHUNK, CANOPY_BLOCKS, CANOPY_THREADS, CANOPY_FIFO_DEPTH   kernel shape (default 256KiB, 24, 512, 4)\n"
      "  CANOPY_LARGE_BYTES, CANOPY_LARGE_BLOCKS   large-message kernel: from 8MiB per rank, 64 blocks per rank\n"
      "  CANOPY_HUGE_BYTES, CANOPY_HUGE_BLOCKS     of those, from 128MiB (0: none) 128 blocks per rank\n"
      "  CANOPY_LL_BYTES, CANOPY_LL_BLOCKS, CANOPY_LL_THREADS   low-latency protocol: up to 256KiB (nccl-tests' size; "
      "0: off),\n"
      "                       32 blocks per rank, 512 threads\n"
      "  CANOPY_LL_TWO_SHOT_BYTES   low-latency allreduces from this size run two-shot (reduce-scatter, then\n"
      "                       allgather; 0: never; default: never up to 3 ranks, from 192KiB on 4-7,\n"
      "                       96KiB on 8-15, 48KiB from 16)\n"
      "  CANOPY_LL128_BYTES, CANOPY_LL128_BLOCKS, CANOPY_LL128_THREADS   LL128 protocol (128-byte lines, NVLink\n"
      "                       only): above LL's limit up to this size (default 0: off), 64 blocks per rank, 512 "
      "threads\n"
      "  CANOPY_DIRECT_BYTES, CANOPY_DIRECT_BLOCKS, CANOPY_DIRECT_THREADS   direct protocol (ranks read peers' "
      "buffers):\n"
      "                       up to 32MiB on the busiest link (0: off), 32 blocks per rank, 512 threads\n"
      "  CANOPY_DIRECT_TWO_SHOT_BYTES   out-of-place direct allreduces, broadcasts and reduces from this size run\n"
      "                       two-shot (each rank moves its share of the elements; 0: never; default: never on\n"
      "                       2 ranks; allreduce from 2MiB on 3, 1MiB on 4-5, 384KiB on 6-7, 256KiB from 8;\n"
      "                       reduce from 4MiB, 2MiB from 8 ranks; broadcast never; broadcast and reduce from\n"
      "                       1MiB on 4+ ranks each on its own GPU); in-place allreduces always\n"
      "  CANOPY_CHECK_POINTERS=0   skip the driver query of each call's buffers (kind, GPU, bounds), as NCCL does\n"
      "  CANOPY_LAUNCH_THREADS=0, CANOPY_LAUNCH_SPIN_US   launch on each GPU in turn instead of through a helper\n"
      "                       thread per GPU; how long helpers wait for work before sleeping (200 us)\n"
      "  CANOPY_HYBRID_BYTES, CANOPY_HYBRID_SHARE   broadcasts and reduces from 64MiB (0: off) move a share\n"
      "                       through pinned host memory beside the kernels; the share (0 to 0.5; default: from\n"
      "                       the topology's rates and the call's size)\n"
      "  CANOPY_ENGINE_BYTES, CANOPY_ENGINE_CHUNK   on two GPUs joined by NVLink, broadcasts (from 64MiB),\n"
      "                       allreduces (128MiB) and reduces (256MiB) move through the copy engines; one size for\n"
      "                       all (0: off); a fixed chunk (default: sized to each call); across two processes\n"
      "                       broadcasts and (out of place) reduces; allreduces where the size is given\n"
      "  CANOPY_ENGINE_FD_BUFFERS=0   across two processes, receive buffers from cuMemCreate (ncclMemAlloc's) take\n"
      "                       the kernels (default 1: they cross as file descriptors, for the copy engines)\n"
      "  CANOPY_PULL=auto|none|in|out|all   edges whose receiver reads the sender's input directly (auto: reduce)\n"
      "  CANOPY_PLAN_FILE          a plan JSON used instead of planning, for its collective\n"
      "  CANOPY_DUMP_DIR           write every prepared collective's plan, schedule, source and manifest there\n"
      "  CANOPY_WATCHDOG_S         report collectives still running after this many seconds (off by default)\n"
      "  CANOPY_NCCL_LIBRARY       libnccl.so.2 for `canopy bench --vs-nccl` (default: the loader's search) and the\n"
      "                            real NCCL libcanopy_nccl.so forwards to (docs/nccl-api.md), and the one a\n"
      "                            communicator over several hosts uses between them (docs/multi-host.md)\n"
      "  CANOPY_HOST_ID            the host a process counts as (default: hostname:boot id); `canopy run --hosts`\n"
      "                            sets it, to test several hosts on one machine (docs/multi-host.md)\n"
      "  CANOPY_NCCL_REAL=auto|0|1   libcanopy_nccl.so: a real NCCL communicator beside each of Canopy's, made at\n"
      "                            init (auto: where every rank can have one; 1: init fails where it cannot)\n"
      "  CANOPY_NCCL_FORWARD       libcanopy_nccl.so: collectives passed to it instead (allreduce,...,all)\n"
      "  CANOPY_BOOTSTRAP_ADDR, CANOPY_SOCKET_IFNAME   the address, else the interface, a multi-process group's\n"
      "                       bootstrap root listens on (default: the first up non-loopback IPv4, else 127.0.0.1)\n"
      "  CANOPY_BOOTSTRAP_TIMEOUT_S   seconds the processes of a group wait for each other (default 120)\n"
      "  CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S   seconds the bootstrap root gives a new connection to send the secret\n"
      "                       (default 5)\n"
      "  CANOPY_STALL_TIMEOUT_S   a multi-process communicator fails when another process is behind it this long\n"
      "                       without a call (default 8; 0: off)\n"
      "  CANOPY_CHECK_CALLS       how a multi-process communicator compares every call (collective, count, type,\n"
      "                       operator, root) across its processes: unset, through the shared pages of each host's\n"
      "                       processes (a mismatch fails every process); 1, through the bootstrap root too (all\n"
      "                       hosts, a round trip per call); 0, not at all\n"
      "  CANOPY_GPU_SHARERS=N     N processes in all run kernels on this GPU at once (other jobs under MPS): each\n"
      "                       communicator's processes fit their grids to 1/N of its SMs (default: their own count)");
  canopy::cli::add_topo_command(app);
  canopy::cli::add_plan_command(app);
  canopy::cli::add_gen_command(app);
  canopy::cli::add_compile_command(app);
  canopy::cli::add_cache_command(app);
  canopy::cli::add_detect_command(app);
  canopy::cli::add_bench_command(app);
  canopy::cli::add_simulate_command(app);
  canopy::cli::add_algo_command(app);
  canopy::cli::add_msccl_command(app);
  canopy::cli::add_tune_command(app);
  canopy::cli::add_warm_command(app);
  canopy::cli::add_run_command(app);
  canopy::cli::add_nccl_tests_compare_command(app);
  canopy::cli::add_bench_compare_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {  // a subcommand's own exit status (`canopy run`: the failing rank's)
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {  // --help, --version, or a usage mistake named with the nearest valid word
    return canopy::cli::parse_error_status(app, e);
  } catch (const canopy::Error& e) {
    std::cerr << "canopy: error: " << e.what() << "\n";
    return 1;
  } catch (const canopy::InternalError& e) {
    std::cerr << "canopy: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
