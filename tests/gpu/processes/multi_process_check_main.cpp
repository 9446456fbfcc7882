// canopy_mp_check: one process of a multi-process datacheck, started N times by `canopy run -n N` (which sets
// CANOPY_RANK, CANOPY_NRANKS and CANOPY_UNIQUE_ID). Each process joins one communicator (Communicator::join) with
// --per-process ranks on its current GPU, then, for each collective and type, prepares the kernels of its cases at
// once (Communicator::spec_of and prepare) and runs every case of the matrix below on its own ranks' buffers
// (bench/harness/collective_buffers: inputs from the test pattern, NCCL's in-place layouts, every output element
// checked against the host reference).
// Prints one line per wrong case (a call the communicator failed while it ran counts as failed, its output not
// checked), progress lines from process 0 (before each collective and type), and a summary;
// exits 1 on any wrong element or failed call, 2 on bad arguments.
//
//   canopy run -n 2 -- canopy_mp_check --topology hgx-h100 --collectives allreduce --counts 7,65540
//
// Across "hosts" (`canopy run --hosts 2,2`, which sets CANOPY_HOST_ID and NCCL_HOSTID per process) give
// --topology detect: each host's processes then find their own topology, the real NCCL joins the hosts
// (docs/multi-host.md; NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 on one machine); the checks are the same.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <csignal>
#include <cstring>
#include <unistd.h>
#include <algorithm>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench/harness/benchmark.hpp"
#include "bench/harness/captured_calls.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "bench/harness/collective_check.hpp"
#include "bench/harness/test_pattern.hpp"
#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/jit/jit.hpp"

namespace {

using namespace canopy;

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = text.find(',', at);
    const std::string part = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v) {
    fmt::print(stderr, "canopy_mp_check: {} is not set: start it with `canopy run -n N -- canopy_mp_check ...`\n", name);
    std::exit(2);
  }
  return std::atoi(v);
}

struct Args {
  std::string topology = "hgx-h100";
  int per_process = 1;
  std::vector<Collective> collectives = {Collective::broadcast, Collective::reduce, Collective::allreduce,
                                         Collective::allgather, Collective::reducescatter};
  std::vector<DataType> dtypes{std::begin(kEveryDataType), std::end(kEveryDataType)};
  std::vector<ReduceOp> ops = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg};
  std::vector<std::uint64_t> counts = {0, 1, 7, 1028, 65540, 3000004, 40000004};
  std::vector<bool> in_place = {false, true};
  std::uint64_t seed = 1;
  // --loop N: instead of the matrix, N allreduces (f32 sum, the first count) checked at the end; with --die-after K,
  // process --die-process (default 1) kills itself with SIGKILL after K of them and the others report the loss.
  int loop = 0;
  int die_after = -1;
  int die_process = 1;
  int off_by_one = -1;  // --off-by-one P: in --loop, process P calls with count + 1 (a mismatched call)
  // --stall-after K: in --loop, process --die-process stops calling after K calls (sleeps 30 s, then exits without
  // leaving): the others' pending call fails once CANOPY_STALL_TIMEOUT_S passes.
  int stall_after = -1;
  // --late-after K: in --loop, process --die-process sleeps --late-ms (default 2000) before its call K, then goes on:
  // the others' call K waits for it (their watchdog, CANOPY_WATCHDOG_S, reports what it waits for).
  int late_after = -1;
  int late_ms = 2000;
  // --split 1: run everything on a communicator split from the joined one: color = process % 2, key = -process
  // (so each group's ranks run in reverse process order).
  bool split = false;
  // --spread 1: process P on GPU P mod the visible GPUs (else on the current one, GPU 0); with --topology detect
  // (no topology given) the join detects the machine's topology over the processes' GPUs.
  bool spread = false;
  // --prepare 0: no Communicator::prepare of each collective and type's kernels before its cases (each kernel is
  // then compiled at its first call, one at a time).
  bool prepare = true;
  // --graph 1: each case's call prepared (Communicator::prepare(call)), captured into a CUDA graph and replayed,
  // instead of run eagerly (one rank per process: its one stream).
  bool graph = false;
  // --memory vmm|pool: the buffers from cuMemCreate with POSIX descriptors (as ncclMemAlloc makes them), which cross
  // as descriptors, or from cudaMallocAsync's pool, which no other process can map (what needs another process's
  // buffers, the copy engines' broadcasts, then moves the call otherwise); default cudaMalloc.
  BufferMemory memory = BufferMemory::cuda_malloc;
  // --root R: every rooted call's root (default: the case number modulo the ranks, so roots alternate).
  int root = -1;
};

// One call of the matrix: what it computes (root and seed from its number) and whether in place.
struct Case {
  CheckSpec spec;
  bool in_place = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) {
      fmt::print(stderr, "canopy_mp_check: {} needs a value\n", k);
      std::exit(2);
    }
    const std::string v = argv[++i];
    if (k == "--topology") {
      a.topology = v;
    } else if (k == "--per-process") {
      a.per_process = std::atoi(v.c_str());
    } else if (k == "--collectives") {
      a.collectives.clear();
      for (const std::string& c : split(v)) a.collectives.push_back(parse_collective(c).value());
    } else if (k == "--dtypes") {
      a.dtypes.clear();
      for (const std::string& d : split(v)) {
        const std::optional<DataType> t = parse_data_type(d);
        if (!t) {
          fmt::print(stderr, "canopy_mp_check: --dtypes: '{}' is not a dtype; use {}\n", d, data_type_choices());
          std::exit(2);
        }
        a.dtypes.push_back(*t);
      }
    } else if (k == "--ops") {
      a.ops.clear();
      for (const std::string& o : split(v)) a.ops.push_back(parse_reduce_op(o).value());
    } else if (k == "--counts") {
      a.counts.clear();
      for (const std::string& c : split(v)) a.counts.push_back(std::stoull(c));
    } else if (k == "--places") {
      a.in_place.clear();
      for (const std::string& p : split(v)) a.in_place.push_back(p == "in");
    } else if (k == "--loop") {
      a.loop = std::atoi(v.c_str());
    } else if (k == "--die-after") {
      a.die_after = std::atoi(v.c_str());
    } else if (k == "--split") {
      a.split = v == "1";
    } else if (k == "--graph") {
      a.graph = v == "1";
    } else if (k == "--prepare") {
      a.prepare = v != "0";
    } else if (k == "--root") {
      a.root = std::atoi(v.c_str());
    } else if (k == "--memory") {
      if (v == "vmm") {
        a.memory = BufferMemory::vmm;
      } else if (v == "pool") {
        a.memory = BufferMemory::pool;
      } else if (v != "malloc") {
        fmt::print(stderr, "canopy_mp_check: --memory {}: use malloc, vmm or pool\n", v);
        std::exit(2);
      }
    } else if (k == "--spread") {
      a.spread = v == "1";
    } else if (k == "--stall-after") {
      a.stall_after = std::atoi(v.c_str());
    } else if (k == "--late-after") {
      a.late_after = std::atoi(v.c_str());
    } else if (k == "--late-ms") {
      a.late_ms = std::atoi(v.c_str());
    } else if (k == "--off-by-one") {
      a.off_by_one = std::atoi(v.c_str());
    } else if (k == "--die-process") {
      a.die_process = std::atoi(v.c_str());
    } else if (k == "--seed") {
      a.seed = std::stoull(v);
    } else {
      fmt::print(stderr,
                 "canopy_mp_check: unknown option {}; options: --topology NAME|detect --per-process K --collectives LIST "
                 "--dtypes LIST --ops LIST --counts LIST --places out,in --seed S --loop N --die-after K --die-process P "
                 "--stall-after K --late-after K --late-ms MS --off-by-one P --split 1 --spread 1 --prepare 0 --graph 1 "
                 "--memory malloc|vmm|pool --root R\n",
                 k);
      std::exit(2);
    }
  }
  return a;
}

// The kernels of one collective and type's cases compiled ahead (NVRTC in parallel threads), not one at each first
// call, in batches of `batch` kernels (prepare_batch). Returns the seconds it took.
double prepare_kernels(Communicator& comm, const std::vector<Case>& cases, std::size_t batch, int process) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<CollectiveSpec> specs;
  for (const Case& k : cases) {
    const CheckSpec& c = k.spec;
    const CollectiveSpec s = comm.spec_of(c.collective, c.count, c.dtype, c.op, c.root, k.in_place);
    if (c.count > 0 && std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
  }
  for (std::size_t at = 0; at < specs.size(); at += batch) {
    const std::span<const CollectiveSpec> part(specs.data() + at, std::min(batch, specs.size() - at));
    if (Status s = comm.prepare(part); !s.ok()) {
      fmt::print("process {}: preparing {} kernels of {} {} failed (each call loads its own): {}\n", process,
                 part.size(), call_name(cases.front().spec.collective), to_string(cases.front().spec.dtype),
                 s.message());
      break;
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

// How many kernels prepare_kernels compiles at once: cores / processes, so that all processes' compiles together stay
// near one per core (each process's prepare alone would take a core's count). Every process must make the same
// batches (the processes agree on each batch's kernels), so on machines with other core counts (several hosts) the
// smallest wins: an allreduce of min over the processes.
Status prepare_batch(Communicator& comm, const std::vector<cudaStream_t>& streams, int processes, std::size_t* batch) {
  double mine = std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(processes));
  if (Status s = collective_on_host(comm, Collective::allreduce, &mine, 1, DataType::f64, ReduceOp::min, 0, streams);
      !s.ok())
    return s;
  *batch = static_cast<std::size_t>(mine);
  return Status();
}

// `call` prepared, captured into a CUDA graph on its one stream, and that graph replayed once and waited for (the
// graph is freed on return).
Status run_captured(Communicator& comm, const CollectiveCall& call, int device) {
  if (Status s = comm.prepare(call); !s.ok()) return Status(s.code(), "prepare(call): " + s.message());
  const int ordinals[] = {device};
  std::unique_ptr<CapturedCalls> captured;
  if (Status s = CapturedCalls::capture(ordinals, call.streams.first(1), 1, [&] { return comm.run(call); }, &captured);
      !s.ok())
    return Status(s.code(), "captured: " + s.message());
  if (Status s = captured->replay(); !s.ok()) return s;
  if (const cudaError_t e = cudaStreamSynchronize(call.streams[0]); e != cudaSuccess)
    return Status(StatusCode::cuda_error, std::string("the replay: ") + cudaGetErrorString(e));
  return Status();
}

#define CHECK_CUDA(call)                                                                                  \
  do {                                                                                                    \
    if (cudaError_t e_ = (call); e_ != cudaSuccess) {                                                     \
      fmt::print(stderr, "process {}: {} failed: {}\n", process, #call, cudaGetErrorString(e_));          \
      return 1;                                                                                           \
    }                                                                                                     \
  } while (0)

int run(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const int process = env_int("CANOPY_RANK");
  const int processes = env_int("CANOPY_NRANKS");
  UniqueId id;
  if (Status s = parse_unique_id(std::getenv("CANOPY_UNIQUE_ID") ? std::getenv("CANOPY_UNIQUE_ID") : "", &id); !s.ok()) {
    fmt::print(stderr, "process {}: CANOPY_UNIQUE_ID: {}\n", process, s.message());
    return 2;
  }
  if (a.graph && a.per_process != 1) {
    fmt::print(stderr, "canopy_mp_check: --graph 1 needs --per-process 1 (a process's one stream is captured)\n");
    return 2;
  }
  int nranks = processes * a.per_process;
  int first = process * a.per_process;
  if (a.spread) {
    int gpus = 0;
    CHECK_CUDA(cudaGetDeviceCount(&gpus));
    CHECK_CUDA(cudaSetDevice(process % std::max(gpus, 1)));
  }
  CommunicatorOptions o;
  if (a.topology != "detect") {  // "detect": none given, the join finds it
    o.topology = load_topology(a.topology);
    for (int r = 0; r < nranks; ++r) o.gpus.push_back(std::to_string(r));
  }
  if (const char* host = std::getenv("CANOPY_HOST_ID"); host && *host)
    fmt::print("process {}: host {}{}\n", process, host,
               a.topology == "detect" ? "" : " (a named topology is not used across hosts: give --topology detect)");
  std::unique_ptr<Communicator> comm;
  if (Status s = Communicator::join(id, nranks, first, o, &comm, a.per_process); !s.ok()) {
    fmt::print(stderr, "process {}: join failed: {}\n", process, s.message());
    return 1;
  }
  std::unique_ptr<Communicator> parent;
  if (a.split) {
    std::unique_ptr<Communicator> child;
    if (Status s = comm->split(process % 2, -process, &child); !s.ok()) {
      fmt::print(stderr, "process {}: split failed: {}\n", process, s.message());
      return 1;
    }
    parent = std::move(comm);
    comm = std::move(child);
    nranks = comm->ranks();
    first = comm->first_own_rank();
    fmt::print("process {}: split into color {}: ranks {}..{} of {}\n", process, process % 2, first,
               first + a.per_process - 1, nranks);
  }
  if (a.root >= nranks) {
    fmt::print(stderr, "canopy_mp_check: --root {}: the communicator has ranks 0..{}\n", a.root, nranks - 1);
    return 2;
  }
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  Jit jit(DiskCache::from_environment());
  PatternKernels patterns(jit, fmt::format("sm_{}{}", prop.major, prop.minor));
  // Buffers for the largest case, per own rank (CollectiveBuffers: this process's ranks only): send and recv of
  // count x nranks 8-byte elements.
  std::uint64_t max_count = 0;
  for (std::uint64_t c : a.counts) max_count = std::max(max_count, c);
  const std::uint64_t bytes = std::max<std::uint64_t>(max_count * nranks * 8, 256);
  std::unique_ptr<CollectiveBuffers> buffers;
  if (Status s = CollectiveBuffers::create(*comm, bytes, bytes, patterns, &buffers, a.memory); !s.ok()) {
    fmt::print(stderr, "process {}: buffers: {}\n", process, s.message());
    return 1;
  }
  if (a.loop > 0) {  // a loop of allreduces, for failure tests
    const auto now_ms = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
    const std::uint64_t count = a.counts.front();
    CollectiveCall call;
    const CheckSpec spec{Collective::allreduce, DataType::f32, ReduceOp::sum, 0, nranks, count, a.seed};
    if (Status s = buffers->set_up(spec, false, &call); !s.ok()) throw Error(s.message());
    for (int k = 0; k < a.loop; ++k) {
      if (k == a.die_after && process == a.die_process) {
        fmt::print("process {}: killing itself (SIGKILL) at {} ms\n", process, now_ms());
        std::fflush(stdout);
        kill(getpid(), SIGKILL);
      }
      if (k == a.stall_after && process == a.die_process) {
        fmt::print("process {}: stops calling at {} ms\n", process, now_ms());
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::seconds(30));
        std::_Exit(0);
      }
      if (k == a.late_after && process == a.die_process) {
        fmt::print("process {}: sleeps {} ms before call {} at {} ms\n", process, a.late_ms, k, now_ms());
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::milliseconds(a.late_ms));
      }
      const Status s =
          comm->allreduce(call.send, call.recv, count + (process == a.off_by_one ? 1 : 0), DataType::f32,
                          ReduceOp::sum, call.streams);
      const Status synced = buffers->synchronize();
      const Status lost = comm->async_error();  // a call the communicator gave up on ends, its output undefined
      if (!s.ok() || !synced.ok() || !lost.ok()) {
        fmt::print("process {}: call {} failed at {} ms: {}\n", process, k, now_ms(),
                   (!s.ok() ? s : !synced.ok() ? synced : lost).message());
        return 3;
      }
    }
    // Each call recomputed the same sums: the last one's output is checked.
    CheckResult res;
    if (Status s = buffers->check(spec, call, &res); !s.ok()) {
      fmt::print("process {}: checking the last allreduce: {}\n", process, s.message());
      return 1;
    }
    fmt::print("process {}: {} allreduces done, {} elements checked, {} wrong\n", process, a.loop, res.checked,
               res.wrong);
    return res.wrong ? 1 : 0;
  }
  std::size_t batch = 1;
  if (a.prepare)
    if (Status s = prepare_batch(*comm, buffers->streams(), processes, &batch); !s.ok()) {
      fmt::print(stderr, "process {}: agreeing on the prepare's batch: {}\n", process, s.message());
      return 1;
    }
  std::uint64_t calls = 0, checked = 0, wrong = 0, failed = 0;
  double preparing = 0;  // seconds in prepare, which the summary reports
  int case_number = 0;
  const auto started = std::chrono::steady_clock::now();
  for (Collective c : a.collectives)
    for (DataType dt : a.dtypes) {
      // Progress, from process 0 alone: a run cut by a timeout shows how far it got.
      if (process == 0 && calls > 0)
        fmt::print("process 0: progress: {} calls, {} wrong, {:.1f} s; next {} {}\n", calls, wrong,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), call_name(c),
                   to_string(dt));
      std::vector<Case> cases;
      for (ReduceOp op : a.ops) {
        if (!reduces(c) && op != a.ops.front()) continue;  // one op for broadcast and allgather
        for (std::uint64_t count : a.counts)
          for (bool in_place : a.in_place) {
            ++case_number;
            const int root = a.root >= 0 ? a.root : case_number % nranks;
            cases.push_back({CheckSpec{c, dt, reduces(c) ? op : ReduceOp::sum, root, nranks, count,
                                       a.seed + case_number},
                             in_place});
          }
      }
      if (a.prepare) preparing += prepare_kernels(*comm, cases, batch, process);
      for (const Case& k : cases) {
        const CheckSpec& spec = k.spec;
        const std::string what = fmt::format("{} {} {} count {} root {} {}", call_name(c), to_string(dt),
                                             to_string(spec.op), spec.count, spec.root,
                                             k.in_place ? "in place" : "out of place");
        CollectiveCall call;
        if (Status s = buffers->set_up(spec, k.in_place, &call); !s.ok()) {
          fmt::print("process {}: {}: set-up failed: {}\n", process, what, s.message());
          return 1;
        }
        ++calls;
        if (Status s = a.graph ? run_captured(*comm, call, device) : comm->run(call); !s.ok()) {
          fmt::print("process {}: {}: call failed: {}\n", process, what, s.message());
          ++failed;
          continue;
        }
        CheckResult res;
        if (Status s = buffers->check(spec, call, &res); !s.ok()) {
          fmt::print("process {}: {}: {}\n", process, what, s.message());
          return 1;
        }
        // A communicator that failed while the call ran (a stalled or lost peer) ended its kernels: the output is
        // undefined, and the call counts as failed, not as wrong elements.
        if (Status lost = comm->async_error(); !lost.ok()) {
          fmt::print("process {}: {}: the communicator failed while the call ran (output not checked): {}\n", process,
                     what, lost.message());
          ++failed;
          continue;
        }
        checked += res.checked;
        wrong += res.wrong;
        if (res.wrong)
          fmt::print("process {} (ranks {}..{}): {}: {} of {} wrong, e.g. {}\n", process, first,
                     first + a.per_process - 1, what, res.wrong, res.checked, fmt::join(res.examples, "; "));
      }
    }
  fmt::print("process {} (ranks {}..{} of {}): {} calls, {} elements checked, {} wrong, {} failed calls{}\n", process,
             first, first + a.per_process - 1, nranks, calls, checked, wrong, failed,
             a.prepare ? fmt::format(" ({:.1f} s preparing kernels)", preparing) : "");
  buffers.reset();
  comm.reset();
  return wrong || failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Line-buffered: the processes share one pipe, and a line written whole (under PIPE_BUF) is never cut by
  // another process's output (the real NCCL's INFO lines included), so the summary lines stay greppable.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "canopy_mp_check: {}\n", e.what());
    return 1;
  }
}
