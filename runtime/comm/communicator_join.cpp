// Communicator::join: one process's part of a multi-process communicator. The process describes itself and its GPU,
// joins the bootstrap group, checks that every process would plan alike (process_group.hpp), places the ranks with one
// device index per process, opens its descriptor channel (checked against the pids the bootstrap recorded) and shares
// memory through IpcPeerMemory; the rest of the set-up is the single-process communicator's (set_up_runtime).
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <unistd.h>

#include <limits.h>

#include <chrono>
#include <functional>
#include <memory>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "core/version.hpp"
#include "dsl/topo_writer.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/communicator_state.hpp"
#include "runtime/comm/process_topology.hpp"
#include "runtime/hosts/host_identity.hpp"
#include "runtime/offload/stream_words.hpp"
#include "runtime/transport/ipc/ipc_peer_memory.hpp"

namespace canopy {

namespace {

// What plans and kernels depend on besides the GPUs: every process must hash the same.
std::string plan_key(const LegacyState& st) {
  const CodegenOptions& o = st.config.shape;
  const ProtocolSettings& p = st.config.protocols;
  Sha256 h;
  h.update(write_topo(st.topology));
  for (const std::string& n : st.placement.rank_names) h.update(n + ",");
  h.update(fmt::format("chunk {} depth {} blocks {} threads {} large {} {} ll {} ll128 {} direct {} fixed {}",
                       o.chunk_bytes, o.fifo_depth, o.blocks_per_rank, o.threads_per_block, st.config.large_bytes,
                       st.config.large_blocks, p.low_latency.max_bytes, p.ll128.max_bytes, p.direct.max_bytes,
                       st.config.chunk_fixed));
  // Only where there is a huge class, so that every key made before it existed stays as it was.
  if (st.config.huge_bytes > 0) h.update(fmt::format(" huge {} {}", st.config.huge_bytes, st.config.huge_blocks));
  // A limit given replaces the per-collective defaults (LL128's; the direct protocol's across GPUs), even at the
  // default's value: processes that differ there would choose other kernels. The copy engines: made or not alike.
  h.update(fmt::format(" given ll128 {} direct {} engines {}", p.ll128_given, p.direct_given,
                       p.engine.min_bytes.value_or(-1)));
  // The kernels' forms: processes that disagree would prepare other kernels and wait for each other forever.
  h.update(fmt::format(" own {} shared {} piece {}", st.config.own_buffers, st.config.stage_only_shared,
                       st.config.inbox_piece_bytes.value_or(-1)));
  h.update(fmt::format(" peer {}", st.config.peer_buffers));
  // The plan-free kernels' shapes: blocks of one launch wait for the same block of the peers' launches, so processes
  // whose block counts differ would wait forever.
  h.update(fmt::format(" shapes ll {} {} ll128 {} {} direct {} {} given {}", p.low_latency.blocks_per_rank,
                       p.low_latency.threads_per_block, p.ll128.blocks_per_rank, p.ll128.threads_per_block,
                       p.direct.blocks_per_rank, p.direct.threads_per_block, p.direct_blocks_given));
  // The host path across processes: every process must split a broadcast or reduce alike and make the rings or not.
  const HybridShape& hy = st.config.hybrid;
  h.update(fmt::format(" hybrid {} given {} share {}", hy.min_bytes, hy.given, hy.share ? *hy.share : -1.0));
  return h.hex_digest();
}

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

// join's steps on the new State (Communicator::make turns what they throw into a Status).
Status join_steps(const UniqueId& id, const UniqueIdContents& contents, int nranks, int rank, int own_ranks,
                  const CommunicatorOptions& options, LegacyState& st) {
  int ordinal = 0;
  if (options.devices.empty()) {
    if (cudaGetDevice(&ordinal) != cudaSuccess) {
      const cudaError_t e = cudaGetLastError();
      return Status(StatusCode::cuda_error, fmt::format("join: no current CUDA device: {}", cudaGetErrorString(e)));
    }
  } else {
    ordinal = options.devices[0];
  }
  const std::vector<GpuDevice> visible = describe_gpus({});
  if (ordinal < 0 || ordinal >= static_cast<int>(visible.size()))
    return Status(StatusCode::invalid_argument,
                  fmt::format("device {} does not exist: {} GPU{} visible (0..{})", ordinal, visible.size(),
                              visible.size() == 1 ? " is" : "s are", visible.size() - 1));
  const GpuDevice& gpu = visible[ordinal];
  // The rank names as a single process would place them, so every process names the same ranks.
  std::vector<std::string> names;
  const auto name_ranks = [&]() -> Status {
    names = place_ranks(st.topology, {gpu}, options.gpus, false).rank_names;
    if (static_cast<int>(names.size()) != nranks)
      return Status(StatusCode::invalid_argument,
                    fmt::format("join with nranks {} but topology {} lists {} GPUs{}: give as many ranks as GPUs (or "
                                "choose them with CommunicatorOptions::gpus)",
                                nranks, st.topology.name(), names.size(), options.gpus.empty() ? "" : " in gpus"));
    st.placement.rank_names = names;
    return Status();
  };
  if (options.topology) {  // else the processes' GPUs decide it, below
    st.topology = *options.topology;
    st.topology.validate();
    st.topology_source = "given";
    if (Status s = name_ranks(); !s.ok()) return s;
  }
  st.config = resolve_config(options, nranks);
  ProcessFacts mine;
  mine.version = library_version();
  mine.host = host_identity();
  mine.hostname = host_name();
  mine.pid = static_cast<long>(getpid());
  mine.first_rank = rank;
  mine.ranks = own_ranks;
  mine.nranks = nranks;
  mine.gpu = gpu;
  mine.plan_key = plan_key(st);
  mine.gpu_sharers = st.config.gpu_sharers;
  // The bootstrap's members are processes; each process holds a block of own_ranks ranks.
  if (nranks % own_ranks != 0 || rank % own_ranks != 0)
    return Status(StatusCode::invalid_argument,
                  fmt::format("ranks {}..{}: with {} ranks per process, nranks ({}) and the first rank must be "
                              "multiples of it",
                              rank, rank + own_ranks - 1, own_ranks, nranks));
  auto group = std::make_unique<ProcessGroup>();
  group->process = rank / own_ranks;
  const int processes = nranks / own_ranks;
  BootstrapOptions bo;
  bo.logger = st.log;
  if (Status s = Bootstrap::join(id, processes, group->process, encode_process_facts(mine), &group->bootstrap, bo);
      !s.ok())
    return s;
  // A call waiting for the other processes through the root stops waiting once this communicator fails (a peer lost,
  // a mismatched call, an abort from another thread): it then returns the failure, not the bootstrap's timeout.
  LegacyState* const failing = &st;
  group->bootstrap->set_give_up([failing] { return failing->failed.load(std::memory_order_relaxed); });
  for (const std::string& payload : group->bootstrap->payloads()) {
    ProcessFacts f;
    if (Status s = decode_process_facts(payload, &f); !s.ok()) return s;
    group->facts.push_back(std::move(f));
  }
  if (Status s = check_process_facts(group->facts); !s.ok()) return s;
  if (several_hosts(group->facts)) return join_across_hosts(options, ordinal, own_ranks, std::move(group), st);
  if (!options.topology) {
    if (one_gpu(group->facts)) {
      st.topology = shared_gpu_topology(nranks);
      st.topology_source = fmt::format("one GPU shared by {} processes", group->processes());
    } else {
      // Processes on different GPUs of this host: the machine's topology over their GPUs, gpuP = process P's, as
      // every process detects it; agreed by hash below, so a process that saw the machine differently fails init.
      if (Status s = detect_process_topology(group->facts, visible, &st.topology); !s.ok()) return s;
      st.topology_source = fmt::format("detected over the GPUs of {} processes", group->processes());
      std::vector<std::string> digests;
      if (Status s = group->bootstrap->allgather(sha256_hex(write_topo(st.topology)), &digests); !s.ok()) return s;
      for (std::size_t p = 0; p < digests.size(); ++p)
        if (digests[p] != digests[0])
          return Status(StatusCode::invalid_argument,
                        fmt::format("{} detected another topology of this machine than process 0 (topology hash {} "
                                    "vs {}): give every process the same topology (CommunicatorOptions::topology, "
                                    "e.g. from `canopy detect --out`)",
                                    describe_process(group->facts[p], static_cast<int>(p), true),
                                    digests[p].substr(0, 12), digests[0].substr(0, 12)));
    }
    if (Status s = name_ranks(); !s.ok()) return s;
  }
  st.placement = place_processes(names, group->facts, group->process,
                                  [&](const std::string& a, const std::string& b) { return can_reach(visible, a, b); });
  FdChannel::Options fo;
  fo.timeout = settle(bo).timeout;
  fo.log = st.log;
  // Both ends of every descriptor connection are checked against the pids the bootstrap recorded (processes of other
  // hosts: 0, they never connect here).
  std::vector<pid_t> pids;
  for (const ProcessFacts& f : group->facts) pids.push_back(f.host == mine.host ? static_cast<pid_t>(f.pid) : 0);
  if (Status s = FdChannel::listen(contents.secret, group->process, std::move(pids), fo, &group->channel); !s.ok())
    return s;
  // A process is its placement's device index, so device_of_rank says which process holds each rank.
  st.peers = std::make_unique<IpcPeerMemory>(*group->channel, group->process, st.placement.device_of_rank, ordinal,
                                              st.placement.peer);
  st.group = std::move(group);
  for (int r = 0; r < nranks; ++r) st.whole.mine.push_back(st.placement.here[st.placement.device_of_rank[r]]);
  set_up_runtime(options, st);
  // The host path of large broadcasts, reduces and allreduces across the processes (set_up_runtime says where; every
  // process alike: the plan key holds its settings, and every process knows the placement). A driver without the
  // rings' stream memory operations (every process of the host alike) leaves the path off by default, and fails the
  // join where its size was given.
  if (st.config.hybrid.min_bytes > 0 && st.group->processes() > 1) {
    if (!st.config.hybrid.given && !ProcessHostRing::supported()) {
      st.log.info(LogSubsys::init, "host path across processes off: this driver lacks the stream memory operations "
                                   "(cuStreamWaitValue32, cuStreamWriteValue32) its rings need");
    } else if (Status s = ProcessHostRing::share(*st.group->channel, st.group->process, st.group->processes(), ordinal,
                                                 &st.host_ring);
               !s.ok()) {
      return s;
    }
  }
  // Broadcasts and reduces on the copy engines between two processes, where the table lets them move broadcasts (two
  // ranks on two devices one NVLink hop apart; from 64 and 256 MiB unless CANOPY_ENGINE_BYTES says otherwise, 0
  // never). Reduces there since s21 (2026-11-27): on H200 x2 1.11 / 1.13 x NCCL at 512 MiB / 1 GiB against the
  // kernels' 1.09 / 1.10, equal at 256 MiB.
  const bool engines_given = st.config.protocols.engine.min_bytes.has_value();
  if (st.group->processes() == 2 && st.protocols.engine_collective(Collective::broadcast) && !engines_given &&
      !StreamWords::supported())
    st.log.info(LogSubsys::init, "copy engines across processes off: this driver lacks the stream memory operations "
                                 "(cuStreamWaitValue32, cuStreamWriteValue32) they need");
  else if (st.group->processes() == 2 && st.protocols.engine_collective(Collective::broadcast))
    if (Status s = ProcessEngines::share(*st.group->channel, st.group->process, ordinal,
                                          st.config.protocols.engine.fd_buffers, &st.engines_across); !s.ok())
      return s;
  // Allreduces on the engines across processes only where their size is given: on two H200s they ran at 0.97-0.99 x
  // the kernels with the host rings (docs/performance.md, 2026-11-28).
  st.engines_allreduce = st.engines_across && engines_given;
  std::vector<WatchedProcess> others;
  for (std::size_t p = 0; p < st.group->facts.size(); ++p) {
    const ProcessFacts& f = st.group->facts[p];
    if (static_cast<int>(p) == st.group->process || f.host != mine.host) continue;
    others.push_back({static_cast<pid_t>(f.pid), describe_process(f, static_cast<int>(p), true)});
  }
  // Every process shares its call counter (whatever its stall setting, so none waits for a page never sent).
  if (Status s = CallCounters::share(*st.group->channel, st.group->process, st.group->processes(), &st.counters);
      !s.ok())
    return s;
  LegacyState* raw = &st;
  std::function<std::string()> stalled = [] { return std::string(); };
  if (st.config.stall_seconds) {
    const double limit = *st.config.stall_seconds;
    auto watch = std::make_shared<StallWatch>(std::chrono::milliseconds(static_cast<std::int64_t>(limit * 1000)));
    stalled = [raw, watch, limit]() -> std::string {
      const CallCounters& c = *raw->counters;
      std::vector<std::uint64_t> calls(c.processes());
      for (int p = 0; p < c.processes(); ++p) calls[p] = c.of(p);
      const auto now = std::chrono::steady_clock::now();
      const std::uint64_t mine = calls[c.process()];
      const int p = watch->check(now, c.process(), mine, calls);
      if (p < 0) return "";
      return fmt::format("{} has made {} calls of this communicator where this process made {}, and none in the "
                         "{:.1f} s since it fell behind: it stopped calling (or is stuck before its next call), and "
                         "this process's call {} waits for it (CANOPY_STALL_TIMEOUT_S={:g}; raise it where processes "
                         "may arrive that far apart, 0 turns this check off)",
                         describe_process(raw->group->facts[p], p, true), calls[p], mine,
                         watch->still_for(p, now).count() / 1000.0, mine, limit);
    };
  }
  // Every 100 ms: another process's communicator failed or was aborted (its page says so: its calls stopped, so
  // this one's would wait for them), else the stall check.
  auto check = [raw, stalled = std::move(stalled)]() -> std::string {
    if (const std::optional<SeenFailure> f = raw->counters->failure_of_another()) {
      const std::string who = describe_process(raw->group->facts[f->process], f->process, true);
      if (f->kind == ProcessFailure::aborted) {  // as expected when every process aborts: said at info level
        raw->fail(fmt::format("{} aborted its communicator ({}): it makes no more calls, so this process's calls "
                              "fail too",
                              who, f->why),
                  ProcessFailure::aborted);
        return "";
      }
      return fmt::format("{} failed, so this process's calls fail too (they would wait for it): {}", who, f->why);
    }
    return stalled();
  };
  st.monitor = std::make_unique<PeerMonitor>(
      std::move(others), [raw](const std::string& why) { raw->fail(why); }, std::move(check));
  return Status();
}

}  // namespace

Status join_legacy(const UniqueId& id, int nranks, int rank, const CommunicatorOptions& options, int own_ranks,
                   std::unique_ptr<CallPath>* out) {
  if (nranks < 1 || own_ranks < 1 || rank < 0 || rank + own_ranks > nranks)
    return Status(StatusCode::invalid_argument,
                  fmt::format("join as ranks {}..{} of {}: give 0 <= rank and rank + own_ranks <= nranks", rank,
                              rank + own_ranks - 1, nranks));
  if (options.devices.size() > 1)
    return Status(StatusCode::invalid_argument,
                  fmt::format("join takes one GPU per process, {} given: run one process per GPU (virtual ranks "
                              "share one GPU)",
                              options.devices.size()));
  UniqueIdContents contents;
  if (Status s = decode_unique_id(id, &contents); !s.ok()) return s;
  return make_legacy(
      options, [&](LegacyState& st) { return join_steps(id, contents, nranks, rank, own_ranks, options, st); }, out);
}

}  // namespace canopy
