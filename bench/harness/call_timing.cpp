// time_calls, across_processes and device_streams (see call_timing.hpp).
#include "bench/harness/call_timing.hpp"

#include <algorithm>
#include <chrono>
#include <memory>

#include "bench/harness/benchmark.hpp"
#include "bench/harness/captured_calls.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "bench/harness/paired_rounds.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

std::vector<cudaStream_t> device_streams(const Communicator& comm, const std::vector<cudaStream_t>& rank_streams) {
  std::vector<cudaStream_t> streams;
  for (int ordinal : own_ordinals(comm))
    for (int k = 0; k < comm.own_ranks(); ++k)
      if (comm.device_of_rank(comm.first_own_rank() + k) == ordinal) {
        streams.push_back(rank_streams[k]);
        break;
      }
  return streams;
}

Status time_calls(Communicator& comm, const std::vector<cudaStream_t>& rank_streams, int warmup, int iters, int repeats,
                  const std::function<Status()>& launch, double* time_us, double* host_us, bool graph) {
  const std::vector<int> ordinals = own_ordinals(comm);
  std::vector<cudaStream_t> streams = device_streams(comm, rank_streams);
  CurrentDevice keep;
  std::vector<cudaEvent_t> start(ordinals.size()), stop(ordinals.size());
  for (std::size_t d = 0; d < ordinals.size(); ++d) {
    cudaSetDevice(ordinals[d]);
    if (cudaEventCreate(&start[d]) != cudaSuccess || cudaEventCreate(&stop[d]) != cudaSuccess)
      return cuda_status(cudaGetLastError(), "cudaEventCreate");
  }
  auto cleanup = [&] {
    for (std::size_t d = 0; d < ordinals.size(); ++d) cudaEventDestroy(start[d]), cudaEventDestroy(stop[d]);
  };
  for (int w = 0; w < warmup; ++w)
    if (Status s = launch(); !s.ok()) return cleanup(), s;
  std::unique_ptr<CapturedCalls> captured;
  if (graph) {
    if (Status s = CapturedCalls::capture(ordinals, streams, iters, launch, &captured); !s.ok()) return cleanup(), s;
    if (Status s = captured->replay(); !s.ok()) return cleanup(), s;  // a warm-up replay
  }
  // A replay on the first GPU's stream holds every GPU's work and ends when all of it has: its events time it.
  const std::size_t timed = graph ? 1 : ordinals.size();
  std::vector<double> loops, hosts;
  for (int rep = 0; rep < repeats; ++rep) {
    if (comm.multi_process()) {
      for (std::size_t d = 0; d < ordinals.size(); ++d) {
        cudaSetDevice(ordinals[d]);
        if (const cudaError_t e = cudaStreamSynchronize(streams[d]); e != cudaSuccess)
          return cleanup(), cuda_status(e, "cudaStreamSynchronize");
      }
      double token = 0;
      if (Status s =
              collective_on_host(comm, Collective::allreduce, &token, 1, DataType::f64, ReduceOp::max, 0, rank_streams);
          !s.ok())
        return cleanup(), s;
    }
    for (std::size_t d = 0; d < timed; ++d) {
      cudaSetDevice(ordinals[d]);
      cudaEventRecord(start[d], streams[d]);
    }
    const auto issued = std::chrono::steady_clock::now();
    if (captured) {
      if (Status s = captured->replay(); !s.ok()) return cleanup(), s;
    } else {
      for (int i = 0; i < iters; ++i)
        if (Status s = launch(); !s.ok()) return cleanup(), s;
    }
    hosts.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - issued).count() /
                    iters);
    for (std::size_t d = 0; d < timed; ++d) {
      cudaSetDevice(ordinals[d]);
      cudaEventRecord(stop[d], streams[d]);
    }
    float slowest = 0;
    for (std::size_t d = 0; d < timed; ++d) {
      cudaSetDevice(ordinals[d]);
      if (const cudaError_t e = cudaEventSynchronize(stop[d]); e != cudaSuccess)
        return cleanup(), cuda_status(e, "cudaEventSynchronize");
      float ms = 0;
      cudaEventElapsedTime(&ms, start[d], stop[d]);
      slowest = std::max(slowest, ms);
    }
    loops.push_back(1000.0 * slowest / iters);
  }
  cleanup();
  std::sort(loops.begin(), loops.end());
  std::sort(hosts.begin(), hosts.end());
  *time_us = loops[loops.size() / 2];
  if (host_us) *host_us = hosts[hosts.size() / 2];
  return Status();
}

Status across_processes(Communicator& comm, const std::vector<cudaStream_t>& rank_streams, ReduceOp op,
                        std::vector<double>& values) {
  if (!comm.multi_process() || values.empty()) return Status();
  return collective_on_host(comm, Collective::allreduce, values.data(), values.size(), DataType::f64, op, 0,
                            rank_streams);
}

Status time_row(Communicator& comm, const std::vector<cudaStream_t>& rank_streams, const RowTiming& t,
                const std::function<Status()>& canopy, const std::function<Status()>& nccl, BenchRow* row) {
  std::vector<double> ours, theirs, host;
  for (int round = 0; round < t.rounds; ++round) {
    double ours_us = 0, host_us = 0, theirs_us = 0;
    const auto time_ours = [&] {
      return time_calls(comm, rank_streams, t.warmup, t.iters, t.repeats, canopy, &ours_us, &host_us, t.graph);
    };
    const auto time_theirs = [&] {
      return nccl ? time_calls(comm, rank_streams, t.warmup, t.iters, t.repeats, nccl, &theirs_us, nullptr, t.graph)
                  : Status();
    };
    const bool ours_first = canopy_first(t.size_index, round);
    if (Status s = ours_first ? time_ours() : time_theirs(); !s.ok()) return s;
    if (Status s = ours_first ? time_theirs() : time_ours(); !s.ok()) return s;
    std::vector<double> times = {ours_us, host_us, theirs_us};  // the slowest process's
    if (Status s = across_processes(comm, rank_streams, ReduceOp::max, times); !s.ok()) return s;
    ours.push_back(times[0]);
    host.push_back(times[1]);
    theirs.push_back(times[2]);
  }
  const Spread a = spread_of(ours), b = spread_of(theirs);
  row->rounds = t.rounds;
  row->time_us = a.median;
  row->time_min_us = a.min;
  row->time_max_us = a.max;
  row->host_us = spread_of(host).median;
  row->nccl_time_us = nccl ? b.median : 0;
  row->nccl_time_min_us = nccl ? b.min : 0;
  row->nccl_time_max_us = nccl ? b.max : 0;
  return Status();
}

}  // namespace canopy
