// tune_protocols (see tune_protocols.hpp): one communicator per protocol with the others off (and one untuned, for
// what calls take today), every size timed on each that takes it, the limits chosen by choose_protocol_limits, each
// size's chosen kernel checked, and the limits written per (machine, collective).
#include "tools/tune_protocols.hpp"

#include <fmt/format.h>

#include <array>
#include <memory>

#include "codegen/ll128_source.hpp"
#include "codegen/low_latency_source.hpp"
#include "dsl/error.hpp"
#include "runtime/benchmark.hpp"
#include "runtime/collective_buffers.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/jit.hpp"
#include "runtime/protocol_choice.hpp"
#include "runtime/tuning_file.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

namespace {

// The largest sizes timed with the line protocols: far beyond where they lose to the direct protocol (LL's 16-byte
// lines carry 8 data bytes), and their buffers grow with the limit.
constexpr std::int64_t kMaxLowLatencyBytes = std::int64_t{4} << 20;
constexpr std::int64_t kMaxLL128Bytes = std::int64_t{64} << 20;
// As Communicator::create refuses line buffers beyond this per GPU.
constexpr std::int64_t kMaxLineBuffersPerGpu = std::int64_t{1} << 30;

std::unique_ptr<Communicator> create(const CommunicatorOptions& options) {
  std::unique_ptr<Communicator> comm;
  if (Status s = Communicator::create(options, &comm); !s.ok()) throw Error(s.message());
  return comm;
}

// Calls take protocol `p` up to `limit` (planned: none of the others), the other protocols off, tuned limits ignored.
std::unique_ptr<Communicator> forced(const CommunicatorOptions& base, Protocol p, std::int64_t limit) {
  CommunicatorOptions o = base;
  o.tuned_protocols = false;
  o.low_latency_bytes = p == Protocol::low_latency ? limit : 0;
  o.ll128_bytes = p == Protocol::ll128 ? limit : 0;
  o.direct_bytes = p == Protocol::direct ? limit : 0;
  return create(o);
}

// The largest power-of-two limit up to `most` whose line buffers fit a GPU running `per_gpu` of `ranks` ranks.
std::int64_t line_limit(std::int64_t most, std::int64_t (*buffer_bytes)(int, std::int64_t), int ranks, int per_gpu) {
  std::int64_t limit = 4096;
  while (limit * 2 <= most && buffer_bytes(ranks, limit * 2) * per_gpu <= kMaxLineBuffersPerGpu) limit *= 2;
  return limit;
}

// The protocol `comm` gives an out-of-place call.
Protocol protocol_of(const Communicator& comm, Collective c, std::uint64_t count, DataType dtype) {
  if (comm.is_low_latency(c, count, dtype)) return Protocol::low_latency;
  if (comm.is_ll128(c, count, dtype)) return Protocol::ll128;
  if (comm.is_direct(c, count, dtype, false)) return Protocol::direct;
  return Protocol::planned;
}

std::string time_text(const std::optional<double>& us) { return us ? fmt::format("{:.1f}", *us) : "-"; }

}  // namespace

void tune_protocols(const ProtocolTuneRequest& rq) {
  CommunicatorOptions untuned_options = rq.communicator;
  untuned_options.tuned_protocols = false;
  const std::unique_ptr<Communicator> untuned = create(untuned_options);
  const int n = untuned->ranks(), per_gpu = (n + untuned->devices() - 1) / untuned->devices();
  std::uint64_t top = 0;
  for (std::uint64_t s : rq.sizes) top = std::max(top, s);
  const std::int64_t most = static_cast<std::int64_t>(top);
  // One communicator per protocol; a protocol that cannot run here (no peer access, no NVLink hop) takes no size.
  std::array<std::unique_ptr<Communicator>, kProtocols> comms;
  comms[static_cast<int>(Protocol::low_latency)] =
      forced(rq.communicator, Protocol::low_latency,
             line_limit(std::min(most, kMaxLowLatencyBytes), low_latency_buffer_bytes, n, per_gpu));
  comms[static_cast<int>(Protocol::ll128)] = forced(
      rq.communicator, Protocol::ll128, line_limit(std::min(most, kMaxLL128Bytes), ll128_buffer_bytes, n, per_gpu));
  comms[static_cast<int>(Protocol::direct)] =
      forced(rq.communicator, Protocol::direct, std::max<std::int64_t>(most, 1) * n);
  comms[static_cast<int>(Protocol::planned)] = forced(rq.communicator, Protocol::planned, 0);

  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, untuned->device_ordinals()[0]) != cudaSuccess)
    throw Error("cudaGetDeviceProperties failed on the first GPU");
  Jit jit(DiskCache::from_environment());
  PatternKernels patterns(jit, fmt::format("sm_{}{}", prop.major, prop.minor));
  std::unique_ptr<CollectiveBuffers> buffers;
  if (Status s = CollectiveBuffers::create(*untuned, top, top, patterns, &buffers); !s.ok()) throw Error(s.message());
  TuningFile file(untuned->tuning_path());
  fmt::print(
      "# canopy tune --protocols: topology {} ({}), {} ranks on {} GPUs, {} {}; us per call (median of {} loops of {} "
      "calls); results to {}\n",
      untuned->topology().name(), untuned->topology_source(), n, untuned->devices(), to_string(rq.dtype),
      to_string(rq.op), rq.repeats, rq.iters, rq.dry_run ? "nowhere (--dry-run)" : untuned->tuning_path().string());
  std::fflush(stdout);

  const auto time = [&](Communicator& comm, const CollectiveCall& call) {
    double us = 0;
    if (Status s = time_call(comm, buffers->streams(), call, rq.warmup, rq.iters, rq.repeats, &us); !s.ok())
      throw Error(s.message());
    return us;
  };
  for (Collective c : rq.collectives) {
    fmt::print("{:<14} {:>8} {:>8} {:>8} {:>8}  {:<8} {:<8}\n", to_string(c), "LL", "LL128", "direct", "planned",
               "untuned", "fastest");
    ProtocolTimes times;
    std::vector<CheckSpec> specs;
    for (std::uint64_t bytes : rq.sizes) {
      const std::uint64_t count = bench_count(c, bytes, rq.dtype, n);
      if (count == 0) continue;
      const CheckSpec spec{c, rq.dtype, rq.op, 0, n, count, 0x7e57u + bytes};
      CollectiveCall call;
      if (Status s = buffers->set_up(spec, false, &call); !s.ok()) throw Error(s.message());
      std::array<std::optional<double>, kProtocols> row;
      for (int p = 0; p < kProtocols; ++p)
        if (protocol_of(*comms[p], c, count, rq.dtype) == static_cast<Protocol>(p)) row[p] = time(*comms[p], call);
      const Protocol today = protocol_of(*untuned, c, count, rq.dtype);
      if (!row[static_cast<int>(today)]) row[static_cast<int>(today)] = time(*untuned, call);
      int fastest = static_cast<int>(today);
      for (int p = 0; p < kProtocols; ++p)
        if (row[p] && *row[p] < *row[fastest]) fastest = p;
      fmt::print("{:>14} {:>8} {:>8} {:>8} {:>8}  {:<8} {:<8}\n", size_text(bytes), time_text(row[0]),
                 time_text(row[1]), time_text(row[2]), time_text(row[3]), to_string(today),
                 to_string(static_cast<Protocol>(fastest)));
      std::fflush(stdout);
      times.sizes.push_back(bytes);
      times.us.push_back(row);
      times.incumbent.push_back(today);
      specs.push_back(spec);
    }
    if (times.sizes.empty()) continue;
    const ProtocolChoice choice = choose_protocol_limits(times);
    const ProtocolKey key{untuned->machine_key(), c};
    if (!choice.changed) {
      fmt::print("{}: kept the untuned limits (cost {:.2f}; the best split, {}, costs {:.2f})\n", to_string(c),
                 choice.incumbent_cost, describe(choice.limits), choice.cost);
      file.erase(key);
      continue;
    }
    // Every size's chosen kernel must be right (set_up rewrites the inputs and poisons the outputs).
    for (std::size_t i = 0; i < specs.size(); ++i) {
      CollectiveCall call;
      CheckResult checked;
      if (Status s = buffers->set_up(specs[i], false, &call); !s.ok()) throw Error(s.message());
      if (Status s = comms[static_cast<int>(choice.picked[i])]->run(call); !s.ok()) throw Error(s.message());
      if (Status s = buffers->check(specs[i], call, &checked); !s.ok()) throw Error(s.message());
      if (checked.wrong > 0)
        throw Error(fmt::format("{} {} through {}: {} wrong elements ({}); nothing was written", to_string(c),
                                size_text(times.sizes[i]), to_string(choice.picked[i]), checked.wrong,
                                checked.examples.empty() ? "" : checked.examples[0]));
    }
    fmt::print(
        "{}: chose {} (cost {:.2f} against the untuned {:.2f}: each size's time over its fastest, summed over {} "
        "sizes; outputs checked)\n",
        to_string(c), describe(choice.limits), choice.cost, choice.incumbent_cost, times.sizes.size());
    file.set(key,
             ProtocolEntry{untuned->topology().name(), rq.dtype, choice.limits, choice.cost, choice.incumbent_cost});
  }
  if (!rq.dry_run) {
    file.save();
    fmt::print("# wrote {} ({} collectives with protocol limits)\n", file.path().string(), file.protocols().size());
  }
}

}  // namespace canopy::cli
