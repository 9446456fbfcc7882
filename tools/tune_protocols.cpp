// tune_protocols (see tune_protocols.hpp): one communicator per protocol with the others off (and one untuned, for
// what calls take today), every size timed on each that takes it, the limits chosen by choose_protocol_limits and
// re-timed where they move a size before they count, each size's chosen kernel checked, and the limits written per
// (machine, collective).
#include "tools/tune_protocols.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>

#include "codegen/ll128_source.hpp"
#include "codegen/low_latency_source.hpp"
#include "core/error.hpp"
#include "bench/harness/benchmark.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "runtime/jit/disk_cache.hpp"
#include "runtime/jit/jit.hpp"
#include "runtime/protocol/protocol_choice.hpp"
#include "runtime/protocol/protocol_table.hpp"
#include "runtime/tune/tuning_file.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

namespace {

// The largest sizes timed with the line protocols: far beyond where they lose to the direct protocol (LL's 16-byte
// lines carry 8 data bytes), and their buffers grow with the limit.
constexpr std::int64_t kMaxLowLatencyBytes = std::int64_t{4} << 20;
constexpr std::int64_t kMaxLL128Bytes = std::int64_t{64} << 20;

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
  while (limit * 2 <= most && buffer_bytes(ranks, limit * 2) * per_gpu <= kMaxLineBufferBytesPerGpu) limit *= 2;
  return limit;
}

std::string time_text(const std::optional<double>& us) { return us ? fmt::format("{:.1f}", *us) : "-"; }

// Fresh rounds of every protocol, in turn, at a size the choice moves.
constexpr int kConfirmRounds = 3;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// One collective's measurements on this machine's communicators and buffers.
class CollectiveTuner {
 public:
  CollectiveTuner(const ProtocolTuneRequest& rq, Communicator& untuned,
                  const std::array<std::unique_ptr<Communicator>, kProtocols>& comms, CollectiveBuffers& buffers,
                  Collective c)
      : rq_(rq), untuned_(untuned), comms_(comms), buffers_(buffers), c_(c) {}

  // Every protocol at every size it can take, and the untuned choice's; prints a row per size as it goes.
  void measure() {
    fmt::print("{:<14} {:>8} {:>8} {:>8} {:>8}  {:<8} {:<8}\n", to_string(c_), "LL", "LL128", "direct", "planned",
               "untuned", "fastest");
    for (std::uint64_t bytes : rq_.sizes) {
      const std::uint64_t count = bench_count(c_, bytes, rq_.dtype, untuned_.ranks());
      if (count == 0) continue;
      times_.sizes.push_back(bytes);
      specs_.push_back(CheckSpec{c_, rq_.dtype, rq_.op, 0, untuned_.ranks(), count, 0x7e57u + bytes});
      const std::size_t i = specs_.size() - 1;
      const CollectiveCall call = set_up(i);
      const Protocol today = untuned_.protocol(c_, count, rq_.dtype);
      times_.incumbent.push_back(today);
      std::array<std::optional<double>, kProtocols> row;
      for (int p = 0; p < kProtocols; ++p)
        if (Communicator* comm = taker(i, static_cast<Protocol>(p))) row[p] = time(*comm, call);
      int fastest = static_cast<int>(today);
      for (int p = 0; p < kProtocols; ++p)
        if (row[p] && *row[p] < *row[fastest]) fastest = p;
      times_.us.push_back(row);
      fmt::print("{:>14} {:>8} {:>8} {:>8} {:>8}  {:<8} {:<8}\n", bench_size_text(bytes), time_text(row[0]),
                 time_text(row[1]), time_text(row[2]), time_text(row[3]), to_string(today),
                 to_string(static_cast<Protocol>(fastest)));
      std::fflush(stdout);
    }
  }

  // The limits, each size the best split moves re-timed (every protocol that runs it, in turn, the medians of those
  // rounds replacing the first times) and the choice made again, until it moves no size not yet re-timed. Re-timed
  // whether or not the first times cleared the gain: noise at a few sizes can as well hide a real gain at others.
  ProtocolChoice choose() {
    ProtocolChoice choice = choose_protocol_limits(times_);
    std::vector<bool> confirmed(times_.sizes.size(), false);
    for (;;) {
      std::vector<std::string> retimed;
      for (std::size_t i = 0; i < times_.sizes.size(); ++i) {
        if (choice.picked[i] == times_.incumbent[i] || confirmed[i]) continue;
        const CollectiveCall call = set_up(i);
        std::array<std::vector<double>, kProtocols> rounds;
        for (int r = 0; r < kConfirmRounds; ++r)
          for (int p = 0; p < kProtocols; ++p)
            if (times_.us[i][p]) rounds[p].push_back(time(*taker(i, static_cast<Protocol>(p)), call));
        std::vector<std::string> now;
        for (int p = 0; p < kProtocols; ++p)
          if (times_.us[i][p]) {
            times_.us[i][p] = median(rounds[p]);
            now.push_back(fmt::format("{} {:.1f}", to_string(static_cast<Protocol>(p)), *times_.us[i][p]));
          }
        confirmed[i] = true;
        retimed.push_back(fmt::format("{} {}", bench_size_text(times_.sizes[i]), fmt::join(now, " ")));
      }
      if (retimed.empty()) break;
      fmt::print("  re-timed where the choice moves ({} rounds, protocols in turn): {}\n", kConfirmRounds,
                 fmt::join(retimed, "; "));
      choice = choose_protocol_limits(times_);
    }
    return choice;
  }

  // Runs each size once through the protocol `choice` gives it and checks every output element; throws on a wrong one.
  void check(const ProtocolChoice& choice) {
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      const CollectiveCall call = set_up(i);
      CheckResult checked;
      if (Status s = taker(i, choice.picked[i])->run(call); !s.ok()) throw Error(s.message());
      if (Status s = buffers_.check(specs_[i], call, &checked); !s.ok()) throw Error(s.message());
      if (checked.wrong > 0)
        throw Error(fmt::format("{} {} through {}: {} wrong elements ({}); nothing was written", to_string(c_),
                                bench_size_text(times_.sizes[i]), to_string(choice.picked[i]), checked.wrong,
                                checked.examples.empty() ? "" : checked.examples[0]));
    }
  }

  std::size_t sizes() const { return times_.sizes.size(); }

 private:
  // Inputs written and outputs poisoned for size i.
  CollectiveCall set_up(std::size_t i) {
    CollectiveCall call;
    if (Status s = buffers_.set_up(specs_[i], false, &call); !s.ok()) throw Error(s.message());
    return call;
  }
  // The communicator that runs size i through protocol p: p's own, or the untuned one where p is its choice there
  // (its limits can reach past the forced one's); null where neither does.
  Communicator* taker(std::size_t i, Protocol p) const {
    const CheckSpec& s = specs_[i];
    if (comms_[static_cast<int>(p)]->protocol(c_, s.count, s.dtype) == p) return comms_[static_cast<int>(p)].get();
    if (untuned_.protocol(c_, s.count, s.dtype) == p) return &untuned_;
    return nullptr;
  }
  double time(Communicator& comm, const CollectiveCall& call) {
    double us = 0;
    if (Status s = time_call(comm, buffers_.streams(), call, rq_.warmup, rq_.iters, rq_.repeats, &us); !s.ok())
      throw Error(s.message());
    return us;
  }

  const ProtocolTuneRequest& rq_;
  Communicator& untuned_;
  const std::array<std::unique_ptr<Communicator>, kProtocols>& comms_;
  CollectiveBuffers& buffers_;
  Collective c_;
  ProtocolTimes times_;
  std::vector<CheckSpec> specs_;
};

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
  for (Collective c : rq.collectives) {
    CollectiveTuner tuner(rq, *untuned, comms, *buffers, c);
    tuner.measure();
    if (tuner.sizes() == 0) continue;
    const ProtocolChoice choice = tuner.choose();
    const ProtocolKey key{untuned->machine_key(), c};
    if (!choice.changed) {
      fmt::print("{}: kept the untuned limits (cost {:.2f}; the best split, {}, costs {:.2f})\n", to_string(c),
                 choice.incumbent_cost, describe(choice.limits), choice.cost);
      file.erase(key);
      continue;
    }
    tuner.check(choice);
    fmt::print(
        "{}: chose {} (cost {:.2f} against the untuned {:.2f}: each size's time over its fastest, summed over {} "
        "sizes; outputs checked)\n",
        to_string(c), describe(choice.limits), choice.cost, choice.incumbent_cost, tuner.sizes());
    file.set(key,
             ProtocolEntry{untuned->topology().name(), rq.dtype, choice.limits, choice.cost, choice.incumbent_cost});
  }
  if (!rq.dry_run) {
    file.save();
    fmt::print("# wrote {} ({} collectives with protocol limits)\n", file.path().string(), file.protocols().size());
  }
}

}  // namespace canopy::cli
