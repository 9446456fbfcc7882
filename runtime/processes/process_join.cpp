// ProcessCallPath::join (process_call_path.hpp): the rest of Communicator::join on one host, once every process said
// what it is (JoinStart). The topology (given, one GPU shared, or this machine's detected over the processes' GPUs
// and agreed by hash), the placement with one device index per process, the descriptor channel (checked against the
// pids the bootstrap recorded) and the memory shared through it (IpcPeerMemory), the kernels' services (GpuKernels),
// then the host rings, the copy engines between two processes, the shared call pages and the monitor.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>

#include "core/sha256.hpp"
#include "topology/topo_writer.hpp"
#include "runtime/processes/process_topology.hpp"
#include "runtime/offload/stream_words.hpp"
#include "runtime/processes/process_call_path.hpp"
#include "runtime/transport/ipc/ipc_peer_memory.hpp"

namespace canopy {

namespace {

// Whether GPU `a` reaches GPU `b`'s memory, both named by UUID, as this process sees them (false for GPUs it does not
// see).
bool can_reach(const std::vector<GpuDevice>& visible, const std::string& a, const std::string& b) {
  int oa = -1, ob = -1;
  for (const GpuDevice& g : visible) {
    if (g.uuid == a) oa = g.ordinal;
    if (g.uuid == b) ob = g.ordinal;
  }
  if (oa < 0 || ob < 0) return false;
  int yes = 0;
  if (cudaDeviceCanAccessPeer(&yes, oa, ob) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return yes != 0;
}

}  // namespace

Status ProcessCallPath::join(JoinStart&& start, const CommunicatorOptions& options) {
  std::unique_ptr<ProcessGroup> group = std::move(start.group);
  // A call waiting for the other processes through the root stops waiting once this communicator fails (a peer lost,
  // a mismatched call, an abort from another thread): it then returns the failure, not the bootstrap's timeout.
  group->bootstrap->set_give_up([this] { return failure_.failed(); });
  const int nranks = start.nranks;
  const int ordinal = start.ordinal;
  layout_.config = std::move(start.config);
  layout_.topology = std::move(start.topology);
  layout_.topology_source = std::move(start.topology_source);
  std::vector<std::string> names = std::move(start.rank_names);
  if (!options.topology) {
    if (one_gpu(group->facts)) {
      layout_.topology = shared_gpu_topology(nranks);
      layout_.topology_source = fmt::format("one GPU shared by {} processes", group->processes());
    } else {
      // Processes on different GPUs of this host: the machine's topology over their GPUs, gpuP = process P's, as
      // every process detects it; agreed by hash below, so a process that saw the machine differently fails init.
      if (Status s = detect_process_topology(group->facts, start.visible, &layout_.topology); !s.ok()) return s;
      layout_.topology_source = fmt::format("detected over the GPUs of {} processes", group->processes());
      std::vector<std::string> digests;
      if (Status s = group->bootstrap->allgather(sha256_hex(write_topo(layout_.topology)), &digests); !s.ok()) return s;
      for (std::size_t p = 0; p < digests.size(); ++p)
        if (digests[p] != digests[0])
          return Status(StatusCode::invalid_argument,
                        fmt::format("{} detected another topology of this machine than process 0 (topology hash {} "
                                    "vs {}): give every process the same topology (CommunicatorOptions::topology, "
                                    "e.g. from `canopy detect --out`)",
                                    describe_process(group->facts[p], static_cast<int>(p), true),
                                    digests[p].substr(0, 12), digests[0].substr(0, 12)));
    }
    if (Status s = name_ranks(layout_.topology, start.mine.gpu, options.gpus, nranks, &names); !s.ok()) return s;
  }
  Placement& pl = layout_.placement;
  pl = place_processes(names, group->facts, group->process,
                       [&](const std::string& a, const std::string& b) { return can_reach(start.visible, a, b); });
  FdChannel::Options fo;
  fo.timeout = settle(start.bootstrap).timeout;
  fo.log = layout_.log;
  // Both ends of every descriptor connection are checked against the pids the bootstrap recorded (processes of other
  // hosts: 0, they never connect here).
  std::vector<pid_t> pids;
  for (const ProcessFacts& f : group->facts) pids.push_back(f.host == start.mine.host ? static_cast<pid_t>(f.pid) : 0);
  if (Status s = FdChannel::listen(start.secret, group->process, std::move(pids), fo, &group->channel); !s.ok())
    return s;
  // A process is its placement's device index, so device_of_rank says which process holds each rank.
  peers_ = std::make_unique<IpcPeerMemory>(*group->channel, group->process, pl.device_of_rank, ordinal, pl.peer);
  group_ = std::move(group);
  first_own_rank_ = group_->facts[group_->process].first_rank;
  own_ranks_ = group_->facts[group_->process].ranks;
  for (int r = 0; r < nranks; ++r) whole_.mine.push_back(pl.here[pl.device_of_rank[r]]);
  CommunicatorConfig& config = layout_.config;
  // The copy engines across processes (ProcessEngines, below: two processes on two GPUs, broadcasts and reduces,
  // writing into the other process's buffers) from the table's sizes (engines_take says which). The host path of
  // large broadcasts, reduces and allreduces (ProcessHostRing, below) by default where the processes hold two GPUs or
  // more, and on one shared GPU only where its size is given (tests). The watchdog watches each process's own
  // launches; its report names the processes.
  const int gpus = distinct_gpus(pl);
  if (!config.hybrid.given && gpus < 2) config.hybrid.min_bytes = 0;
  GpuKernels::Setup setup;
  setup.own_buffers = on_own_buffers();
  setup.inbox_across_gpus = config.own_buffers && gpus >= 2;
  setup.across_processes = true;
  setup.own_engines = false;
  if (static_cast<int>(group_->facts.size()) == pl.devices())
    for (std::size_t q = 0; q < group_->facts.size(); ++q)
      setup.watched.push_back(describe_process(group_->facts[q], static_cast<int>(q), true));
  setup.devices_are = "processes";
  setup.describe = describe_process_placement;
  setup.engines_take = [this](Collective c, std::uint64_t bytes) { return engines_take(c, bytes); };
  setup.agree = [this](const std::vector<std::string>& keys) { return agree_on_kernels(keys); };
  kernels_.set_up(options, *peers_, std::move(setup));
  // The host path of large broadcasts, reduces and allreduces across the processes (above; every process alike: the
  // plan key holds its settings, and every process knows the placement). A driver without the rings' stream memory
  // operations (every process of the host alike) leaves the path off by default, and fails the join where its size
  // was given.
  if (config.hybrid.min_bytes > 0 && group_->processes() > 1) {
    if (!config.hybrid.given && !ProcessHostRing::supported()) {
      layout_.log.info(LogSubsys::init,
                       "host path across processes off: this driver lacks the stream memory "
                       "operations (cuStreamWaitValue32, cuStreamWriteValue32) its rings need");
    } else if (Status s =
                   ProcessHostRing::share(*group_->channel, group_->process, group_->processes(), ordinal, &host_ring_);
               !s.ok()) {
      return s;
    }
  }
  // Broadcasts and reduces on the copy engines between two processes, where the table lets them move broadcasts (two
  // ranks on two devices one NVLink hop apart; from 64 and 256 MiB unless CANOPY_ENGINE_BYTES says otherwise, 0
  // never). Reduces there since s21 (2026-11-27): on H200 x2 1.11 / 1.13 x NCCL at 512 MiB / 1 GiB against the
  // kernels' 1.09 / 1.10, equal at 256 MiB.
  const ProtocolTable& protocols = kernels_.protocols();
  const bool engines_given = config.protocols.engine.min_bytes.has_value();
  if (group_->processes() == 2 && protocols.engine_collective(Collective::broadcast) && !engines_given &&
      !StreamWords::supported())
    layout_.log.info(LogSubsys::init,
                     "copy engines across processes off: this driver lacks the stream memory "
                     "operations (cuStreamWaitValue32, cuStreamWriteValue32) they need");
  else if (group_->processes() == 2 && protocols.engine_collective(Collective::broadcast))
    if (Status s = ProcessEngines::share(*group_->channel, group_->process, ordinal, config.protocols.engine.fd_buffers,
                                         &engines_across_);
        !s.ok())
      return s;
  // Allreduces on the engines across processes only where their size is given: on two H200s they ran at 0.97-0.99 x
  // the kernels with the host rings (docs/performance.md, 2026-11-28).
  engines_allreduce_ = engines_across_ && engines_given;
  kernels_.use_peer_words(peer_buffers_across());
  // Sends and receives across processes (send_recv) where the driver has the stream memory operations (every process
  // of the host alike; else send_recv refuses, naming them).
  if (StreamWords::supported())
    if (Status s = share_pairs(ordinal); !s.ok()) return s;
  // Every process shares its call counter (whatever its stall setting, so none waits for a page never sent).
  if (Status s = CallCounters::share(*group_->channel, group_->process, group_->processes(), &counters_); !s.ok())
    return s;
  watch_others(start.mine.host);
  return Status();
}

void ProcessCallPath::watch_others(const std::string& host) {
  std::vector<WatchedProcess> others;
  for (std::size_t p = 0; p < group_->facts.size(); ++p) {
    const ProcessFacts& f = group_->facts[p];
    if (static_cast<int>(p) == group_->process || f.host != host) continue;
    others.push_back({static_cast<pid_t>(f.pid), describe_process(f, static_cast<int>(p), true)});
  }
  std::function<std::string()> stalled = [] { return std::string(); };
  if (layout_.config.stall_seconds) {
    const double limit = *layout_.config.stall_seconds;
    auto watch = std::make_shared<StallWatch>(std::chrono::milliseconds(static_cast<std::int64_t>(limit * 1000)));
    stalled = [this, watch, limit]() -> std::string {
      const CallCounters& c = *counters_;
      std::vector<std::uint64_t> calls(c.processes());
      for (int p = 0; p < c.processes(); ++p) calls[p] = c.of(p);
      const auto now = std::chrono::steady_clock::now();
      const std::uint64_t mine = calls[c.process()];
      const int p = watch->check(now, c.process(), mine, calls);
      if (p < 0) return "";
      return fmt::format(
          "{} has made {} calls of this communicator where this process made {}, and none in the "
          "{:.1f} s since it fell behind: it stopped calling (or is stuck before its next call), and "
          "this process's call {} waits for it (CANOPY_STALL_TIMEOUT_S={:g}; raise it where processes "
          "may arrive that far apart, 0 turns this check off)",
          describe_process(group_->facts[p], p, true), calls[p], mine, watch->still_for(p, now).count() / 1000.0, mine,
          limit);
    };
  }
  // Every 100 ms: another process's communicator failed or was aborted (its page says so: its calls stopped, so
  // this one's would wait for them), else the stall check.
  auto check = [this, stalled = std::move(stalled)]() -> std::string {
    if (const std::optional<SeenFailure> f = counters_->failure_of_another()) {
      const std::string who = describe_process(group_->facts[f->process], f->process, true);
      if (f->kind == ProcessFailure::aborted) {  // as expected when every process aborts: said at info level
        fail(fmt::format("{} aborted its communicator ({}): it makes no more calls, so this process's calls fail too",
                         who, f->why),
             ProcessFailure::aborted);
        return "";
      }
      return fmt::format("{} failed, so this process's calls fail too (they would wait for it): {}", who, f->why);
    }
    return stalled();
  };
  monitor_ = std::make_unique<PeerMonitor>(
      std::move(others), [this](const std::string& why) { fail(why, ProcessFailure::failed); }, std::move(check));
}

}  // namespace canopy
