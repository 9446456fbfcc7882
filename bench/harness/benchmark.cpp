// run_benchmark and the bench JSON (see benchmark.hpp).
#include "bench/harness/benchmark.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/error.hpp"
#include "bench/harness/call_timing.hpp"
#include "bench/harness/captured_calls.hpp"
#include "bench/harness/empty_kernel.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

namespace {

// An empty kernel's host time per launch (EmptyKernel), timed as time_calls times a row: a call launches it once on
// each of this process's GPUs in turn; across processes, the slowest process's.
Status time_launch_floor(Communicator& comm, const std::vector<cudaStream_t>& rank_streams, const BenchOptions& o,
                         double* launch_us) {
  std::unique_ptr<EmptyKernel> kernel;
  if (Status s = EmptyKernel::load(&kernel); !s.ok()) return s;
  const std::vector<int> ordinals = own_ordinals(comm);
  const std::vector<cudaStream_t> streams = device_streams(comm, rank_streams);
  CurrentDevice keep;
  if (ordinals.size() == 1) CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(ordinals[0]));
  const auto launch = [&]() -> Status {
    for (std::size_t d = 0; d < ordinals.size(); ++d) {
      if (ordinals.size() > 1) CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(ordinals[d]));
      if (Status s = kernel->launch(streams[d]); !s.ok()) return s;
    }
    return Status();
  };
  double gpu_us = 0;
  if (Status s = time_calls(comm, rank_streams, o.warmup, o.iters, o.repeats, launch, &gpu_us, launch_us); !s.ok())
    return s;
  std::vector<double> slowest = {*launch_us};
  if (Status s = across_processes(comm, rank_streams, ReduceOp::max, slowest); !s.ok()) return s;
  *launch_us = slowest[0];
  return Status();
}

}  // namespace

Status collective_on_host(Communicator& comm, Collective collective, void* host, std::uint64_t count, DataType dtype,
                          ReduceOp op, int root, const std::vector<cudaStream_t>& rank_streams) {
  const std::uint64_t bytes = count * static_cast<std::uint64_t>(size_of(dtype));
  CurrentDevice keep;
  std::vector<void*> buffers(comm.own_ranks(), nullptr);
  auto release = [&] {
    for (void* b : buffers)
      if (b) (void)cudaFree(b);
  };
  for (int k = 0; k < comm.own_ranks(); ++k) {
    CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(comm.device_of_rank(comm.first_own_rank() + k)));
    if (const cudaError_t e = cudaMalloc(&buffers[k], std::max<std::uint64_t>(bytes, 1)); e != cudaSuccess)
      return release(), cuda_status(e, "cudaMalloc for host data through the communicator");
    if (const cudaError_t e = cudaMemcpy(buffers[k], host, bytes, cudaMemcpyHostToDevice); e != cudaSuccess)
      return release(), cuda_status(e, "cudaMemcpy of host data to the GPU");
  }
  const std::vector<const void*> send(buffers.begin(), buffers.end());
  CollectiveCall call{collective, send, buffers, count, dtype, op, root, rank_streams};
  if (Status s = comm.run(call); !s.ok()) return release(), s;
  CANOPY_CUDA_RETURN_STATUS(cudaSetDevice(comm.device_of_rank(comm.first_own_rank())));
  const cudaError_t e = cudaMemcpyAsync(host, buffers[0], bytes, cudaMemcpyDeviceToHost, rank_streams[0]);
  const cudaError_t synced = e == cudaSuccess ? cudaStreamSynchronize(rank_streams[0]) : e;
  release();
  return synced == cudaSuccess ? Status() : cuda_status(synced, "host data back from the communicator");
}

int bench_procs(const Communicator& comm) { return comm.multi_process() ? comm.devices() : 1; }

std::string bench_device(const Communicator& comm, const std::string& gpu) {
  std::string device = gpu;
  if (comm.multi_process())
    device += fmt::format(" ({} processes{})", bench_procs(comm),
                          comm.own_ranks() > 1 ? fmt::format(" of {} ranks", comm.own_ranks()) : "");
  else if (comm.devices() > 1)
    device = fmt::format("{} x{}", device, comm.devices());
  if (!comm.multi_process() && comm.ranks() > comm.devices())
    device += fmt::format(" ({} virtual ranks)", comm.ranks());
  return device;
}

std::uint64_t bench_count(Collective c, std::uint64_t bytes, DataType dtype, int ranks) {
  const std::uint64_t elements = bytes / static_cast<std::uint64_t>(size_of(dtype));
  if (c == Collective::allgather || c == Collective::reducescatter) return elements / static_cast<std::uint64_t>(ranks);
  return elements;
}

std::uint64_t bench_count(const algo::Program& p, std::uint64_t bytes, DataType dtype) {
  return bytes / static_cast<std::uint64_t>(size_of(dtype)) / static_cast<std::uint64_t>(widest_buffer_chunks(p)) *
         static_cast<std::uint64_t>(p.chunks());
}

double busbw_factor(const algo::Program& p) {
  if (const std::optional<Collective> c = p.collective()) return busbw_factor(*c, p.ranks());
  return p.goal() == "alltoall" ? static_cast<double>(p.ranks() - 1) / p.ranks() : 1.0;
}

std::string bench_size_text(std::uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return fmt::format("{}G", b >> 30);
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return fmt::format("{}M", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{}K", b >> 10);
  return fmt::format("{}", b);
}

std::string bench_sizes_text(const std::vector<std::uint64_t>& sizes) {
  std::string text;
  for (std::uint64_t b : sizes) text += (text.empty() ? "" : ", ") + bench_size_text(b);
  return text;
}

std::vector<std::uint64_t> parse_bench_sizes(const std::string& text) {
  std::vector<std::uint64_t> sizes;
  if (text.find(':') != std::string::npos) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t at; (at = text.find(':', start)) != std::string::npos; start = at + 1)
      parts.push_back(text.substr(start, at - start));
    parts.push_back(text.substr(start));
    if (parts.size() > 3) throw Error(fmt::format("--sizes '{}': expected MIN:MAX or MIN:MAX:FACTOR", text));
    const std::uint64_t lo = static_cast<std::uint64_t>(parse_byte_size(parts[0], "--sizes minimum"));
    const std::uint64_t hi = static_cast<std::uint64_t>(parse_byte_size(parts[1], "--sizes maximum"));
    std::uint64_t factor = 2;
    if (parts.size() == 3) factor = static_cast<std::uint64_t>(parse_byte_size(parts[2], "--sizes factor"));
    if (lo == 0 || hi < lo || factor < 2)
      throw Error(fmt::format("--sizes '{}': need 0 < MIN <= MAX and a factor of at least 2", text));
    for (std::uint64_t s = lo; s <= hi; s *= factor) {
      sizes.push_back(s);
      if (s > hi / factor) break;
    }
  } else {
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t end = std::min(text.find(',', start), text.size());
      const std::uint64_t s = static_cast<std::uint64_t>(parse_byte_size(text.substr(start, end - start), "--sizes"));
      if (s == 0) throw Error(fmt::format("--sizes '{}': sizes must be positive", text));
      sizes.push_back(s);
      start = end + 1;
    }
  }
  return sizes;
}

Status run_benchmark(Communicator& comm, const BenchOptions& o, NcclBaseline* nccl,
                     const std::function<void(const BenchRow&)>& on_row) {
  const int n = comm.ranks();
  std::uint64_t top = 0;
  for (std::uint64_t s : o.sizes) top = std::max(top, s);
  // Buffers for the largest size of any collective (reduce-scatter sends S, allgather receives S).
  std::vector<CollectiveSpec> specs;
  const algo::Program* program = o.program ? &o.program->program : nullptr;
  const std::vector<Collective> collectives =
      program ? std::vector<Collective>{program->collective().value_or(Collective::allreduce)} : o.collectives;
  if (program) {
    CollectiveSpec spec{collectives[0], o.dtype, o.op, 0};
    spec.program = std::shared_ptr<const algo::Program>(o.program, program);
    specs.push_back(spec);
  }
  // The kernels its calls will run (Communicator::spec_of), all compiled at once before the first is timed; only
  // those, so that a kernel cache warmed for these calls (`canopy warm`) leaves nothing to compile.
  for (Collective c : program ? std::vector<Collective>{} : o.collectives)
    for (std::uint64_t size : o.sizes) {
      const std::uint64_t count = bench_count(c, size, o.dtype, n);
      if (count == 0) continue;
      const CollectiveSpec s = comm.spec_of(c, count, o.dtype, o.op, o.root, o.in_place);
      if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
    }
  if (Status s = comm.prepare(specs); !s.ok()) return s;
  cudaDeviceProp prop{};
  if (const cudaError_t e = cudaGetDeviceProperties(&prop, own_ordinals(comm)[0]); e != cudaSuccess)
    return cuda_status(e, "cudaGetDeviceProperties");
  Jit jit(DiskCache::from_environment());
  std::unique_ptr<PatternKernels> patterns;
  try {
    patterns = std::make_unique<PatternKernels>(jit, fmt::format("sm_{}{}", prop.major, prop.minor));
  } catch (const Error& e) {
    return Status(StatusCode::compile_error, e.what());
  }
  std::unique_ptr<CollectiveBuffers> buffers;
  if (Status s = CollectiveBuffers::create(comm, top, top, *patterns, &buffers); !s.ok()) return s;
  double launch_us = 0;
  if (o.launch_floor && !o.graph)
    if (Status s = time_launch_floor(comm, buffers->streams(), o, &launch_us); !s.ok()) return s;
  const int procs = bench_procs(comm);
  const std::string device = bench_device(comm, prop.name);
  for (Collective c : collectives)
    for (std::size_t size_index = 0; size_index < o.sizes.size(); ++size_index) {
      const std::uint64_t size = o.sizes[size_index];
      const std::uint64_t count = program ? bench_count(*program, size, o.dtype) : bench_count(c, size, o.dtype, n);
      if (count == 0) continue;
      // A program's count is a multiple of its chunks: the size it moves may be a little below the size asked.
      const std::uint64_t bytes = program ? size_bytes(*program, count, o.dtype) : size;
      CheckSpec spec{c, o.dtype, o.op, program ? program->root() : o.root, n, count, 0x5eed0000u + size};
      spec.program = o.program;
      CollectiveCall call;
      if (Status s = buffers->set_up(spec, o.in_place, &call); !s.ok()) return s;
      BenchRow row;
      if (program) {
        row.algorithm = program->name();
        row.goal = program->goal();
      }
      row.collective = c;
      row.dtype = o.dtype;
      row.op = o.op;
      row.bytes = bytes;
      row.count = count;
      row.ranks = n;
      row.procs = procs;
      row.iters = o.iters;
      row.device = device;
      row.launch_us = launch_us;
      // Captured calls never take the copy engines or the host path: load the kernel a captured call runs.
      if (o.graph)
        if (Status s = comm.prepare(call); !s.ok()) return s;
      if (o.check && o.graph) {  // one call, captured and replayed
        std::unique_ptr<CapturedCalls> one;
        const std::vector<cudaStream_t> streams = device_streams(comm, buffers->streams());
        if (Status s = CapturedCalls::capture(
                own_ordinals(comm), streams, 1, [&] { return comm.run(call); }, &one);
            !s.ok())
          return s;
        if (Status s = one->replay(); !s.ok()) return s;  // ordered on every stream: the check's wait covers it
      } else if (o.check) {
        if (Status s = comm.run(call); !s.ok()) return s;
      }
      if (o.check) {
        CheckResult result;
        if (Status s = buffers->check(spec, call, &result); !s.ok()) return s;
        std::vector<double> wrong = {static_cast<double>(result.wrong)};
        if (Status s = across_processes(comm, buffers->streams(), ReduceOp::sum, wrong); !s.ok()) return s;
        row.errors = static_cast<std::int64_t>(wrong[0]);
        for (const std::string& e : result.examples) fmt::print(stderr, "canopy bench: wrong: {}\n", e);
      }
      const double factor = program ? busbw_factor(*program) : busbw_factor(c, n);
      CollectiveCall same = call;  // a program: NCCL runs its goal on the same buffers
      same.program = nullptr;
      const bool with_nccl = nccl && (!program || program->collective());
      if (Status s = time_row(comm, buffers->streams(), RowTiming{o.warmup, o.iters, o.repeats, o.graph, o.rounds,
                                                                    size_index},
                              [&] { return comm.run(call); },
                              with_nccl ? std::function<Status()>([&] { return nccl->run(same); }) : nullptr, &row);
          !s.ok())
        return s;
      row.algbw_gbps = static_cast<double>(bytes) / (row.time_us * 1e-6) / 1e9;
      row.busbw_gbps = row.algbw_gbps * factor;
      if (row.nccl_time_us > 0)
        row.nccl_busbw_gbps = static_cast<double>(bytes) / (row.nccl_time_us * 1e-6) / 1e9 * factor;
      on_row(row);
    }
  return buffers->synchronize();
}

Status time_call(Communicator& comm, const std::vector<cudaStream_t>& rank_streams, const CollectiveCall& call,
                 int warmup, int iters, int repeats, double* time_us) {
  return time_calls(comm, rank_streams, warmup, iters, repeats, [&] { return comm.run(call); }, time_us);
}

std::string bench_rows_json(const std::vector<BenchRow>& rows) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const BenchRow& r : rows) {
    nlohmann::ordered_json j;
    j["collective"] = r.goal.empty() ? to_string(r.collective) : r.goal;  // alltoall, custom: goals of no Collective
    if (!r.algorithm.empty()) j["algorithm"] = r.algorithm;
    j["dtype"] = to_string(r.dtype);
    j["op"] = to_string(r.op);
    j["bytes"] = r.bytes;
    j["ranks"] = r.ranks;
    if (r.procs > 1) j["procs"] = r.procs;  // ranks in several processes (canopy bench --procs)
    if (r.iters > 0) j["iters"] = r.iters;  // timed calls a loop
    j["time_us"] = r.time_us;
    if (r.rounds > 1) {  // several rounds: time_us is their median (paired_rounds.hpp)
      j["rounds"] = r.rounds;
      j["time_us_min"] = r.time_min_us;
      j["time_us_max"] = r.time_max_us;
    }
    j["algbw_GBps"] = r.algbw_gbps;
    j["busbw_GBps"] = r.busbw_gbps;
    j["errors"] = r.errors;
    if (r.launch_us > 0) {  // canopy bench --host-time
      j["host_us"] = r.host_us;
      j["launch_us"] = r.launch_us;
    }
    if (r.nccl_time_us > 0) {
      j["nccl_time_us"] = r.nccl_time_us;
      j["nccl_busbw_GBps"] = r.nccl_busbw_gbps;
      if (r.rounds > 1) {
        j["nccl_time_us_min"] = r.nccl_time_min_us;
        j["nccl_time_us_max"] = r.nccl_time_max_us;
      }
    } else {
      j["nccl_time_us"] = nullptr;
      j["nccl_busbw_GBps"] = nullptr;
    }
    j["device"] = r.device;
    out.push_back(j);
  }
  return out.dump(1) + "\n";
}

}  // namespace canopy
