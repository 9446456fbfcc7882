// Communicator: set-up, preparation of collectives and calls (see communicator.hpp). Preparation is the pipeline
// of DESIGN.md, one step a line: plan (once per collective and root) -> fit the shape to the GPUs -> check peer
// access along every tree edge -> Builder (lower, emit, format, NVRTC through the caches) -> load -> counters.
#include "runtime/comm/communicator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "codegen/lower.hpp"
#include "core/sha256.hpp"
#include "codegen/lower_program.hpp"
#include "codegen/direct_source.hpp"
#include "codegen/ll128_source.hpp"
#include "codegen/low_latency_source.hpp"
#include "core/error.hpp"
#include "dsl/topo_writer.hpp"
#include "dsl/topology_subset.hpp"
#include "planner/host_share.hpp"
#include "planner/planner.hpp"
#include "runtime/jit/collective_dump.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/detect/detect_topology.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/offload/combine_kernels.hpp"
#include "runtime/offload/copy_engine_pair.hpp"
#include "runtime/offload/host_staging.hpp"
#include "core/logger.hpp"
#include "runtime/comm/peer_access_check.hpp"
#include "runtime/launch/prepared_collective.hpp"
#include "runtime/comm/runtime_env.hpp"
#include "runtime/tune/tuning_file.hpp"
#include "runtime/watchdog/watchdog.hpp"
#include "templates/device_args.cuh"

namespace canopy {

namespace {

// collective, dtype, op, root (normalised), large, protocol (0 trees, 1 low latency, 2 direct, 3 LL128, 4 low
// latency two-shot, 5 direct two-shot), program key
// (planned: "" or its chunk)
using SpecKey = std::tuple<int, int, int, int, bool, int, std::string>;

// Whether `s` runs a plan-free kernel (low-latency, LL128, direct): no plan, no chunk, the communicator's memory.
bool plan_free(const CollectiveSpec& s) { return s.low_latency || s.ll128 || s.direct; }

// A program spec must be canonical (State::canonical): one object per distinct program, so its address names it.
SpecKey key_of(const CollectiveSpec& s) {
  const int dtype = static_cast<int>(s.dtype);
  if (s.program)
    return {-1,      dtype, s.program->reduces() ? static_cast<int>(s.op) : 0,   0,
            s.large, 0,     fmt::format("program@{}", fmt::ptr(s.program.get()))};
  const int op = reduces(s.collective) ? static_cast<int>(s.op) : 0;
  const int root = has_root(s.collective) ? s.root : 0;
  // A planned kernel's chunk, when not the communicator's: the program-key slot names it.
  const bool planned = !plan_free(s);
  std::string chunk = s.chunk_bytes > 0 && planned ? fmt::format("chunk {}", s.chunk_bytes) : "";
  return {static_cast<int>(s.collective),
          dtype,
          op,
          root,
          s.large && planned,
          s.low_latency ? (s.two_shot ? 4 : 1)
          : s.direct    ? (s.two_shot ? 5 : 2)
          : s.ll128     ? 3
                        : 0,
          chunk};
}

// Whether two programs have everything program_key hashes the same (cheap: no text, no hash).
bool same_program(const algo::Program& a, const algo::Program& b) {
  if (&a == &b) return true;
  if (a.name() != b.name() || a.goal() != b.goal() || a.ranks() != b.ranks() || a.chunks() != b.chunks() ||
      a.root() != b.root() || a.ops().size() != b.ops().size())
    return false;
  for (algo::Buffer buffer : {algo::Buffer::input, algo::Buffer::output})
    if (a.buffer_chunks(buffer) != b.buffer_chunks(buffer)) return false;
  for (std::size_t k = 0; k < a.ops().size(); ++k) {
    const algo::Op &x = a.ops()[k], &y = b.ops()[k];
    if (x.kind != y.kind || !(x.src == y.src) || !(x.dst == y.dst) || x.hints.channel != y.hints.channel ||
        x.hints.step != y.hints.step || x.line != y.line)
      return false;
  }
  return true;
}

std::string spec_text(const CollectiveSpec& s) {
  if (s.program) {
    std::string text = fmt::format("algorithm {} {}", s.program->name(), to_string(s.dtype));
    if (s.program->reduces()) text += " " + to_string(s.op);
    return s.large ? text + " (large messages)" : text;
  }
  std::string text = fmt::format("{} {}", call_name(s.collective), to_string(s.dtype));
  if (reduces(s.collective)) text += " " + to_string(s.op);
  if (has_root(s.collective)) text += fmt::format(" root {}", s.root);
  if (s.low_latency)
    text += s.two_shot ? " (low latency, two-shot)" : " (low latency)";
  else if (s.ll128)
    text += " (LL128)";
  else if (s.direct)
    text += s.two_shot ? " (direct, two-shot)" : " (direct)";
  else if (s.large)
    text += " (large messages)";
  if (s.chunk_bytes > 0 && !plan_free(s)) text += fmt::format(", chunk {}", format_byte_size(s.chunk_bytes));
  return text;
}

// Whether some rank's receive buffer is its send buffer (check_call refuses any other overlap).
bool in_place(const CollectiveCall& call) {
  for (std::size_t r = 0; r < call.send.size() && r < call.recv.size(); ++r)
    if (call.send[r] == call.recv[r]) return true;
  return false;
}

PointerFacts pointer_facts(const void* p) {
  // One driver call when it can answer (no device switch): a call's four or more pointers cost microseconds
  // otherwise, which small messages feel (docs/performance.md).
  if (const std::optional<DriverPointerFacts> d = driver_pointer_facts(p); d && d->memory_type != 0) {
    PointerFacts f;
    f.kind = d->managed            ? MemoryKind::managed
             : d->memory_type == 2 ? MemoryKind::device
             : d->memory_type == 1 ? MemoryKind::host
                                   : MemoryKind::unregistered;
    f.device = d->device;
    if ((f.kind == MemoryKind::device || f.kind == MemoryKind::managed) && d->allocation.bytes > 0)
      f.allocation = d->allocation;
    return f;
  }
  PointerFacts f;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return f;
  }
  switch (a.type) {
    case cudaMemoryTypeDevice: f.kind = MemoryKind::device; break;
    case cudaMemoryTypeManaged: f.kind = MemoryKind::managed; break;
    case cudaMemoryTypeHost: f.kind = MemoryKind::host; break;
    default: f.kind = MemoryKind::unregistered; break;
  }
  f.device = a.device;
  if (f.kind == MemoryKind::device || f.kind == MemoryKind::managed) {
    CurrentDevice keep;
    if (cudaSetDevice(a.device) == cudaSuccess) f.allocation = allocation_range(p);
    (void)cudaGetLastError();
  }
  return f;
}

// A stream's ID (one query per call) and its GPU, asked once per stream: IDs are never reused within a process, so
// the GPU found for one stays true. `known` holds the pairs seen (a few streams in practice; emptied past 64).
std::optional<StreamFacts> stream_facts(cudaStream_t s, std::vector<StreamFacts>* known) {
  StreamFacts f;
  if (cudaStreamGetId(s, &f.id) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  for (const StreamFacts& k : *known)
    if (k.id == f.id) return k;
  if (cudaStreamGetDevice(s, &f.device) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  if (known->size() >= 64) known->clear();
  known->push_back(f);
  return f;
}

bool stream_capturing(cudaStream_t s) {
  cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &c) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;  // an invalid stream: stream_facts says so
  }
  return c != cudaStreamCaptureStatusNone;
}

}  // namespace

constexpr std::size_t kCollectives = static_cast<std::size_t>(Collective::reducescatter) + 1;

struct Communicator::State {
  Logger log;
  std::vector<GpuDevice> gpus;        // per device index
  std::vector<int> device_of_rank;    // device index per rank
  std::vector<int> ordinal_of_rank;   // CUDA ordinal per rank
  std::vector<int> ordinals;          // per device index
  std::vector<int> first_rank;        // per device index: its first rank, whose stream its launch uses
  std::vector<std::vector<bool>> peer;  // device index pairs
  Topology topology{"unset"};
  std::string topology_source;
  std::vector<std::string> rank_names;
  CodegenOptions shape;  // requested chunk, FIFO depth, blocks, threads
  int large_blocks = 128;             // blocks per rank of the large-message kernels
  std::int64_t large_bytes = 8 << 20;  // per-rank buffer bytes from which a call is large
  // A line protocol's memory (low-latency, LL128), made when its first kernel is loaded.
  struct LineMemory {
    std::vector<void*> lines;  // per rank: 2 parities x a slot per rank
    std::vector<void*> acks;   // per rank: acknowledgement counters (rank x block), then the launch counter's line
    std::vector<unsigned long long*> launches;  // per device index: the launch counter
    std::uint64_t epoch = 0;                    // eager launches so far, shared by every kernel of the protocol
  };
  // Per collective, up to which size S calls take the low-latency and LL128 protocols (0: never), and the direct
  // protocol's limit on S where `canopy tune --protocols` chose one (unset: on the bytes moved, direct.max_bytes).
  // The shapes' max_bytes are the most any collective takes (their buffers' size; 0: the protocol is off).
  std::array<std::int64_t, kCollectives> ll_limit{};
  std::array<std::int64_t, kCollectives> ll128_limit{};
  std::array<std::optional<std::int64_t>, kCollectives> direct_limit;
  LowLatencyShape low_latency;  // max_bytes 0: off
  std::int64_t ll_two_shot_bytes = 0;  // low-latency allreduces from this size run two-shot (0: never)
  LineMemory ll_memory;
  LL128Shape ll128;  // max_bytes 0: off
  LineMemory ll128_memory;
  std::vector<StreamFacts> streams_seen;  // stream_facts' record of each stream's GPU
  // CANOPY_CHECK_POINTERS=0: no pointer queries.
  CallOracle oracle{pointer_facts, [this](cudaStream_t s) { return stream_facts(s, &streams_seen); }, stream_capturing};
  std::vector<unsigned long long> call_stream_ids;  // per rank: the IDs check_call found for this call's streams
  // The last eager call's kernel, for calls that repeat it (no program: a program's spec is made canonical first).
  CollectiveSpec last_spec;
  PreparedCollective* last_prepared = nullptr;
  DirectShape direct;                               // max_bytes 0: off
  // Out-of-place direct allreduces, broadcasts and reduces from this size run two-shot (0: never); unset: the
  // defaults per collective and ranks (direct_two_shot_default_bytes).
  std::optional<std::int64_t> direct_two_shot_bytes;
  // Whether a direct call of `collective` whose size S is `bytes` runs two-shot: an allreduce in place always
  // (one-shot's ranks would read inputs being overwritten), else from the limit for its collective.
  bool direct_two_shot(Collective collective, std::uint64_t bytes, bool in_place) const {
    if (!direct_has_two_shot(collective)) return false;
    if (in_place && collective == Collective::allreduce) return true;
    const std::int64_t from =
        direct_two_shot_bytes.value_or(direct_two_shot_default_bytes(collective, static_cast<int>(rank_names.size())));
    return from > 0 && bytes >= static_cast<std::uint64_t>(from);
  }
  std::vector<void*> direct_flags;     // per rank: the direct kernels' counters (entered and done, rank x block)
  std::vector<unsigned long long*> direct_launches;  // per device index: the direct kernels' launch counter
  std::uint64_t direct_epoch = 0;                    // eager direct launches so far, shared by every direct kernel
  std::string machine;                 // sha256 of the topology's canonical text: its key in tuning.json
  std::filesystem::path tuning_path;
  std::unique_ptr<TuningFile> tuning;  // read once at creation
  bool chunk_fixed = false;            // CANOPY_CHUNK or CommunicatorOptions::chunk_bytes: tuning does not apply
  std::unique_ptr<Builder> builder;

  std::mutex mutex;
  bool broken = false;  // a partial launch left kernels waiting
  bool device_epochs = false;  // calls were captured into CUDA graphs: the kernels count their own launches
  std::string broken_why;
  std::map<std::pair<int, int>, Plan> plans;  // (collective, root)
  std::map<SpecKey, std::unique_ptr<PreparedCollective>> prepared;
  // Programs: one copy per distinct program (by program_key), and the copy each caller's object last matched, so a
  // repeated call compares statements instead of hashing their text.
  std::map<std::string, std::shared_ptr<const algo::Program>> programs;
  std::map<const algo::Program*, std::shared_ptr<const algo::Program>> program_of_caller;
  CollectiveSpec canonical(CollectiveSpec spec);
  std::vector<void*> scratch;                 // per rank
  std::vector<std::int64_t> scratch_bytes;    // per rank
  DeviceOrder order;
  std::vector<cudaStream_t> setup_stream;  // per device index: non-blocking, for zeroing counters
  std::unique_ptr<Watchdog> watchdog;
  std::unique_ptr<LaunchCrew> crew;  // several GPUs and launch threads on: launches on all at once
  HybridShape hybrid;                // min_bytes 0: off
  std::map<std::pair<int, int>, HostPath> host_paths;  // (collective, root) -> trees' and host path's rates
  // The host path's ring and side streams, and per GPU architecture the hybrid reduce's combining kernels: made by
  // load() for a large broadcast or reduce that may stage, else by the first call that stages (ready_staging).
  std::unique_ptr<HostStaging> staging;
  std::map<std::string, std::unique_ptr<CombineKernels>> combine;
  // Copy engines for large broadcasts, reduces and allreduces on two GPUs (min_bytes 0: off, or not two GPUs joined
  // by NVLink; unset: sizes per collective): made by load() for a large one of those, else by the first call they move
  // (ready_engines).
  EngineShape engine;
  std::unique_ptr<CopyEnginePair> engines;

  ~State();
  void synchronize();  // waits for every launch of this communicator
  Plan plan_for(const CollectiveSpec& spec);
  CodegenOptions shape_for(const CollectiveSpec& spec, const Plan& plan) const;
  CodegenOptions shape_for(const CollectiveSpec& spec) const;  // a program's
  CodegenOptions shape_for(const CollectiveSpec& spec,
                           const std::function<Schedule(const CodegenOptions&)>& lower_at) const;
  void check_peers(const Plan& plan) const;
  void check_peers(const algo::Program& program) const;
  void load(const CollectiveSpec& spec, const std::vector<std::shared_ptr<const BuiltCollective>>& builds,
            const std::vector<std::string>& archs, CacheOutcome outcome);
  void grow_scratch(const std::vector<RankResources>& need);
  Status get(const CollectiveSpec& spec, PreparedCollective** out);
  bool find(const CollectiveSpec& spec, PreparedCollective** out);  // get() without preparing: false if not prepared
  // Per rank: bytes(rank) of memory on its GPU, zeroed on the setup streams (whoever allocates waits for them).
  std::vector<void*> zeroed_per_rank(const std::function<std::size_t(int)>& bytes);
  // Per device index: the launch counter in the line after `lines(r)` counter lines of its first rank's area.
  std::vector<unsigned long long*> counters_after(const std::vector<void*>& areas,
                                                  const std::function<int(int)>& lines);
  // Per rank: a line protocol's `bytes` of lines and its acknowledgement counters (rank x block, then the launch
  // counter's line), zeroed; once.
  void allocate_lines(const char* what, std::int64_t bytes, int blocks_per_rank, LineMemory* memory);
  void allocate_low_latency();  // the LL buffers and counters, once (from load)
  void allocate_ll128();        // the LL128 buffers and counters, once (from load)
  void allocate_direct();       // the direct kernels' counters, once (from load)
  Status prepare(std::span<const CollectiveSpec> specs);
  // The trees' and the host path's rates for (collective, root), planned and logged once.
  const HostPath& host_path_for(Collective collective, DataType dtype, int root);
  // Whether calls of this collective and root can stage at some size: hybrid on, several GPUs, a broadcast or a
  // reduce (of at most CombineKernels::kMaxSources ranks), and a share given or a host path.
  bool may_stage(Collective collective, DataType dtype, int root);
  // on_engines: the rest of the call moves on the copy engines, which leave the SMs free (planner/host_share.hpp).
  std::uint64_t staged_count(Collective collective, std::uint64_t count, DataType dtype, int root, bool on_engines);
  Status ready_staging(Collective collective, int root);  // makes what stage() needs, once
  Status stage(const CollectiveCall& call, std::uint64_t staged, const std::vector<cudaStream_t>& streams,
               bool on_engines);
  Status combine_for(const std::string& arch, const CombineKernels** out);  // loaded once per GPU architecture
  bool engine_collective(Collective collective) const;  // the copy engines on and this collective one they move
  bool engine_sized(Collective collective, std::uint64_t count, DataType dtype) const;
  Status ready_engines(Collective collective);  // the pair, and the combining kernels, once
  Status run_on_engines(const CollectiveCall& call);
};

Communicator::State::~State() {
  watchdog.reset();
  crew.reset();
  synchronize();
  engines.reset();  // likewise the copy engines' work
  staging.reset();  // its copies and the combining kernels it queued are done: the GPUs are idle
  combine.clear();
  CurrentDevice keep;
  prepared.clear();
  for (std::size_t r = 0; r < scratch.size(); ++r)
    if (scratch[r]) (void)cudaFree(scratch[r]);
  for (const LineMemory* m : {&ll_memory, &ll128_memory})
    for (const std::vector<void*>* area : {&m->lines, &m->acks})
      for (void* p : *area)
        if (p) (void)cudaFree(p);
  for (void* p : direct_flags)
    if (p) (void)cudaFree(p);
  for (cudaEvent_t e : order.done)
    if (e) (void)cudaEventDestroy(e);
  for (cudaStream_t s : setup_stream)
    if (s) (void)cudaStreamDestroy(s);
  (void)cudaGetLastError();
}

void Communicator::State::synchronize() {
  CurrentDevice keep;
  for (std::size_t d = 0; d < order.done.size(); ++d)
    if (order.used[d]) {
      (void)cudaSetDevice(ordinals[d]);
      // No event marks the last launch (DeviceOrder records one only on a stream switch), and its stream may be
      // gone by now: wait for the whole GPU (this runs when scratch grows and when the communicator ends).
      (void)cudaDeviceSynchronize();
    }
  (void)cudaGetLastError();
}

Plan Communicator::State::plan_for(const CollectiveSpec& spec) {
  const std::pair<int, int> key{static_cast<int>(spec.collective), has_root(spec.collective) ? spec.root : 0};
  if (auto it = plans.find(key); it != plans.end()) return it->second;
  Plan p;
  if (const std::optional<Plan> file = plan_file_for(spec.collective, rank_names,
                                                     has_root(spec.collective) ? rank_names[spec.root] : "")) {
    p = *file;
    log.info(LogSubsys::plan, fmt::format("{}: plan read from CANOPY_PLAN_FILE", call_name(spec.collective)));
  } else {
    PlanOptions o;
    o.gpus = rank_names;
    if (has_root(spec.collective)) o.root = rank_names[spec.root];
    p = plan(topology, spec.collective, o);
    check_no_relay_gpus(p, topology);
  }
  if (log.enabled(LogLevel::info, LogSubsys::plan))
    log.info(LogSubsys::plan, fmt::format("{}{} on {} ({} ranks on {} GPUs): {} tree(s) ({}), predicted algbw {:.1f} GB/s, "
                                          "bound {:.1f} GB/s",
                                          call_name(spec.collective),
                                          has_root(spec.collective) ? " root " + rank_names[spec.root] : "",
                                          topology.name(), rank_names.size(), gpus.size(), p.trees.size(),
                                          plan_strategy(p), p.algbw_gbps, p.bound_algbw_gbps));
  return plans.emplace(key, std::move(p)).first->second;
}

CodegenOptions Communicator::State::shape_for(const CollectiveSpec& spec, const Plan& plan) const {
  return shape_for(spec, [&](const CodegenOptions& o) { return lower(plan, o); });
}

CodegenOptions Communicator::State::shape_for(const CollectiveSpec& spec) const {
  return shape_for(spec,
                   [&](const CodegenOptions& o) { return lower_program(*spec.program, o, topology, rank_names); });
}

CodegenOptions Communicator::State::shape_for(const CollectiveSpec& spec,
                                              const std::function<Schedule(const CodegenOptions&)>& lower_at) const {
  CodegenOptions o = shape;
  if (spec.large) o.blocks_per_rank = large_blocks;
  if (spec.chunk_bytes > 0) o.chunk_bytes = spec.chunk_bytes;
  o.dtype = spec.dtype;
  o.op = spec.op;
  o.device_of_rank = device_of_rank;
  std::vector<DeviceLimits> limits;
  for (const GpuDevice& g : gpus) limits.push_back(g.limits);
  return fit_launch_shape(lower_at, o, limits);
}

void Communicator::State::check_peers(const Plan& plan) const {
  check_peer_access(plan, rank_names, device_of_rank, peer, ordinals);
}

// Every statement between ranks of different GPUs needs peer access both ways (the executing rank reads or writes
// the other's memory; counters are raised both ways).
void Communicator::State::check_peers(const algo::Program& program) const {
  for (const algo::Op& op : program.ops()) {
    const int a = device_of_rank[op.src.rank], b = device_of_rank[op.dst.rank];
    if (a != b && !(peer[a][b] && peer[b][a]))
      throw Error(fmt::format(
          "algorithm {}, line {}: {} -> {} joins GPUs {} and {}, which cannot access each other's "
          "memory (no peer access): run it on GPUs with P2P (nvidia-smi topo -p2p r)",
          program.name(), op.line, algo::to_string(op.src), algo::to_string(op.dst), ordinals[a], ordinals[b]));
  }
}

std::vector<void*> Communicator::State::zeroed_per_rank(const std::function<std::size_t(int)>& bytes) {
  CurrentDevice keep;
  std::vector<void*> out(rank_names.size(), nullptr);
  try {
    for (std::size_t r = 0; r < out.size(); ++r) {
      const std::size_t b = bytes(static_cast<int>(r));
      CANOPY_CUDA_CHECK(cudaSetDevice(ordinal_of_rank[r]));
      CANOPY_CUDA_CHECK(cudaMalloc(&out[r], b));
      CANOPY_CUDA_CHECK(cudaMemsetAsync(out[r], 0, b, setup_stream[device_of_rank[r]]));
    }
  } catch (...) {
    for (void* q : out)
      if (q) (void)cudaFree(q);
    throw;
  }
  return out;
}

std::vector<unsigned long long*> Communicator::State::counters_after(const std::vector<void*>& areas,
                                                                     const std::function<int(int)>& lines) {
  std::vector<unsigned long long*> out;
  for (int first : first_rank)
    out.push_back(static_cast<unsigned long long*>(areas[first]) +
                  static_cast<std::size_t>(lines(first)) * kFlagStride);
  return out;
}

void Communicator::State::allocate_lines(const char* what, std::int64_t bytes, int blocks_per_rank,
                                         LineMemory* memory) {
  if (!memory->lines.empty()) return;
  const int n = static_cast<int>(rank_names.size());
  const int acks = n * blocks_per_rank;
  const std::size_t ack_bytes = static_cast<std::size_t>(acks + 1) * kFlagStride * 8;  // and the launch counter
  memory->lines = zeroed_per_rank([&](int) { return static_cast<std::size_t>(bytes); });
  memory->acks = zeroed_per_rank([&](int) { return ack_bytes; });
  memory->launches = counters_after(memory->acks, [&](int) { return acks; });
  log.debug(LogSubsys::init, fmt::format("{} buffers: {} bytes and {} counters per rank", what, bytes, acks));
}

void Communicator::State::allocate_low_latency() {
  allocate_lines("low-latency", low_latency_buffer_bytes(static_cast<int>(rank_names.size()), low_latency.max_bytes),
                 low_latency.blocks_per_rank, &ll_memory);
}

void Communicator::State::allocate_ll128() {
  allocate_lines("LL128", ll128_buffer_bytes(static_cast<int>(rank_names.size()), ll128.max_bytes),
                 ll128.blocks_per_rank, &ll128_memory);
}

void Communicator::State::allocate_direct() {
  if (!direct_flags.empty()) return;
  const int n = static_cast<int>(rank_names.size());
  const int count = direct_flag_count(n, direct.blocks_per_rank);
  const std::size_t bytes = static_cast<std::size_t>(count + 1) * kFlagStride * sizeof(std::uint64_t);
  direct_flags = zeroed_per_rank([&](int) { return bytes; });
  direct_launches = counters_after(direct_flags, [&](int) { return count; });
  log.debug(LogSubsys::init, fmt::format("direct counters: {} bytes per rank", bytes));
}

void Communicator::State::grow_scratch(const std::vector<RankResources>& need) {
  bool grow = false;
  for (std::size_t r = 0; r < need.size(); ++r) grow |= std::max<std::int64_t>(need[r].scratch_bytes, 16) > scratch_bytes[r];
  if (!grow) return;
  synchronize();  // launches in flight use the old scratch
  CurrentDevice keep;
  for (std::size_t r = 0; r < need.size(); ++r) {
    const std::int64_t bytes = std::max<std::int64_t>(need[r].scratch_bytes, 16);
    if (bytes <= scratch_bytes[r]) continue;
    CANOPY_CUDA_CHECK(cudaSetDevice(ordinal_of_rank[r]));
    if (scratch[r]) CANOPY_CUDA_CHECK(cudaFree(scratch[r]));
    scratch[r] = nullptr;
    scratch_bytes[r] = 0;
    CANOPY_CUDA_CHECK(cudaMalloc(&scratch[r], bytes));
    scratch_bytes[r] = bytes;
  }
  log.debug(LogSubsys::init, fmt::format("scratch per rank grown to {} bytes (rank 0)", scratch_bytes[0]));
}

void Communicator::State::load(const CollectiveSpec& spec,
                               const std::vector<std::shared_ptr<const BuiltCollective>>& builds,
                               const std::vector<std::string>& archs, CacheOutcome outcome) {
  CurrentDevice keep;
  auto p = std::make_unique<PreparedCollective>();
  p->built = builds[0];
  p->outcome = outcome;
  const KernelSource& k = p->built->source;
  std::map<std::string, cudaKernel_t> by_arch;
  for (std::size_t d = 0; d < gpus.size(); ++d) {
    if (!by_arch.count(gpus[d].arch)) {
      const std::size_t b = std::find(archs.begin(), archs.end(), gpus[d].arch) - archs.begin();
      CANOPY_INTERNAL_ASSERT(b < builds.size(), "no build for a GPU's architecture");
      cudaLibrary_t lib{};
      CANOPY_CUDA_CHECK(cudaSetDevice(gpus[d].ordinal));
      CANOPY_CUDA_CHECK(
          cudaLibraryLoadData(&lib, builds[b]->module->cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
      p->libraries.push_back(lib);
      cudaKernel_t kernel{};
      CANOPY_CUDA_CHECK(cudaLibraryGetKernel(&kernel, lib, k.entry.c_str()));
      by_arch[gpus[d].arch] = kernel;
    }
    p->kernel.push_back(by_arch[gpus[d].arch]);
    p->blocks.push_back(k.launches[d].blocks);
  }
  p->threads = k.launches[0].threads;
  p->cooperative = !(plan_free(spec) && rank_names.size() == gpus.size());
  p->protocol = spec.low_latency ? PreparedCollective::Protocol::low_latency
                : spec.ll128     ? PreparedCollective::Protocol::ll128
                : spec.direct    ? PreparedCollective::Protocol::direct
                                 : PreparedCollective::Protocol::trees;
  p->collective = spec.collective;
  p->root = spec.root;
  p->two_shot = spec.two_shot;
  p->blocks_per_rank = spec.low_latency ? low_latency.blocks_per_rank
                       : spec.ll128     ? ll128.blocks_per_rank
                       : spec.direct    ? direct.blocks_per_rank
                                        : 0;
  // Every block of a launch must be resident at once (they wait on each other).
  for (std::size_t d = 0; d < gpus.size(); ++d) {
    CANOPY_CUDA_CHECK(cudaSetDevice(gpus[d].ordinal));
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(p->kernel[d]), p->threads,
                                                      0) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;  // the cooperative launch still refuses a grid that does not fit
    }
    if (per_sm * gpus[d].limits.sms < p->blocks[d])
      throw Error(fmt::format("{} needs {} resident blocks of {} threads on GPU {}, which holds {} ({} per SM): lower "
                              "CANOPY_BLOCKS or CANOPY_THREADS, or place fewer ranks on it",
                              k.entry, p->blocks[d], p->threads, gpus[d].ordinal, per_sm * gpus[d].limits.sms, per_sm));
  }
  const auto flag_lines = [&](int r) { return std::max(1, k.resources[r].flag_count); };
  p->flags = zeroed_per_rank([&](int r) { return (flag_lines(r) + 1) * sizeof(unsigned long long) * kFlagStride; });
  p->launches = counters_after(p->flags, flag_lines);
  grow_scratch(k.resources);
  // The plan-free kernels' memory is the communicator's, made with the first of them: here, not at the first call,
  // where a cudaMalloc could wait for the caller's work on the GPU.
  if (spec.low_latency) allocate_low_latency();
  if (spec.ll128) allocate_ll128();
  if (spec.direct) allocate_direct();
  // Likewise the host path of large broadcasts and reduces, and a reduce's combining kernels (an NVRTC compile),
  // and the copy engines of large broadcasts and allreduces.
  if (spec.large && !spec.program && may_stage(spec.collective, spec.dtype, spec.root))
    if (Status s = ready_staging(spec.collective, spec.root); !s.ok()) throw Error(s.message());
  if (spec.large && !spec.program && engine_collective(spec.collective))
    if (Status s = ready_engines(spec.collective); !s.ok()) throw Error(s.message());
  // The counters are zero before any launch; the caller's own work on its streams is not waited for.
  for (std::size_t d = 0; d < gpus.size(); ++d) {
    CANOPY_CUDA_CHECK(cudaSetDevice(gpus[d].ordinal));
    CANOPY_CUDA_CHECK(cudaStreamSynchronize(setup_stream[d]));
  }
  if (log.enabled(LogLevel::info, LogSubsys::jit)) {
    const CodegenOptions& o = p->built->schedule.options;
    log.info(LogSubsys::jit,
             fmt::format("{}: kernel {} (chunk {}, FIFO depth {}, {} threads x {} blocks per GPU{}{}), {} (cache entry "
                         "{})",
                         spec_text(spec), k.entry, format_byte_size(o.chunk_bytes), o.fifo_depth, o.threads_per_block,
                         fmt::join(p->blocks, "/"),
                         o.min_blocks_per_sm ? fmt::format(", >= {} blocks per SM", o.min_blocks_per_sm) : "",
                         o.pull != PullEdges::none ? ", pulled edges " + to_string(o.pull) : "",
                         to_string(outcome), p->built->cache_key.substr(0, 16)));
  }
  dump_collective(*p->built);
  last_prepared = nullptr;  // an entry may be replaced
  prepared[key_of(spec)] = std::move(p);
}

Status Communicator::State::prepare(std::span<const CollectiveSpec> specs) {
  if (broken) return Status(StatusCode::cuda_error, broken_why);
  struct Job {
    CollectiveSpec spec;
    BuildOptions options;
    Plan plan;
    std::vector<std::string> archs;
    std::vector<std::future<std::pair<std::shared_ptr<const BuiltCollective>, CacheOutcome>>> builds;
  };
  std::vector<Job> jobs;
  std::set<SpecKey> seen;
  for (const CollectiveSpec& given : specs) {
    const CollectiveSpec spec = canonical(given);
    const SpecKey key = key_of(spec);
    if (prepared.count(key) || !seen.insert(key).second) continue;
    const int n = static_cast<int>(rank_names.size());
    if (!spec.program && has_root(spec.collective) && (spec.root < 0 || spec.root >= n))
      return Status(StatusCode::invalid_argument,
                    fmt::format("{}: root {} is not a rank: use 0 to {}", call_name(spec.collective), spec.root, n - 1));
    if ((spec.low_latency && low_latency.max_bytes == 0) || (spec.ll128 && ll128.max_bytes == 0) ||
        (spec.direct && direct.max_bytes == 0))
      return Status(StatusCode::unsupported,
                    fmt::format("{}: the {} protocol is off on this communicator (CANOPY_LOG=info says why): prepare "
                                "the spec without it",
                                spec_text(spec),
                                spec.low_latency ? "low-latency"
                                : spec.ll128     ? "LL128"
                                                 : "direct"));
    if (spec.two_shot && (spec.program || !((spec.low_latency && spec.collective == Collective::allreduce) ||
                                            (spec.direct && direct_has_two_shot(spec.collective)))))
      return Status(StatusCode::invalid_argument,
                    fmt::format("{}: two-shot is a variant of the low-latency allreduce and of the direct allreduce, "
                                "broadcast and reduce; set low_latency or direct accordingly, or unset two_shot",
                                spec_text(spec)));
    Job job;
    job.spec = spec;
    if (spec.program && spec.program->ranks() != n)
      return Status(StatusCode::invalid_argument,
                    fmt::format("{}: the program is written for {} ranks but the communicator has {}", spec_text(spec),
                                spec.program->ranks(), n));
    try {
      if (plan_free(spec)) {
        const OneLaunchShape& shape = spec.low_latency ? low_latency : spec.ll128 ? ll128 : direct;
        job.options.codegen.dtype = spec.dtype;
        job.options.codegen.op = spec.op;
        job.options.codegen.chunk_bytes = spec.direct ? 0 : shape.max_bytes;
        job.options.codegen.blocks_per_rank = shape.blocks_per_rank;
        job.options.codegen.threads_per_block = shape.threads_per_block;
        job.options.codegen.device_of_rank = device_of_rank;
      } else if (spec.program) {
        check_peers(*spec.program);
        job.options.codegen = shape_for(spec);
      } else {
        job.plan = plan_for(spec);
        job.options.codegen = shape_for(spec, job.plan);
        check_peers(job.plan);
      }
    } catch (const Error& e) {
      return Status(StatusCode::compile_error, fmt::format("{}: {}", spec_text(spec), e.what()));
    } catch (const InternalError& e) {
      return Status(StatusCode::internal, fmt::format("{}: {}", spec_text(spec), e.what()));
    }
    for (const GpuDevice& g : gpus)
      if (std::find(job.archs.begin(), job.archs.end(), g.arch) == job.archs.end()) job.archs.push_back(g.arch);
    jobs.push_back(std::move(job));
  }
  // Generation and NVRTC in parallel (the Builder and the caches are thread-safe); loading on this thread.
  for (Job& job : jobs)
    for (const std::string& arch : job.archs) {
      BuildOptions o = job.options;
      o.compile.arch = arch;
      job.builds.push_back(std::async(std::launch::async, [this, spec = job.spec, plan = job.plan, o]() {
        CacheOutcome outcome{};
        std::shared_ptr<const BuiltCollective> built;
        if (plan_free(spec)) {
          const OneLaunchShape& shape = spec.low_latency ? low_latency : spec.ll128 ? ll128 : direct;
          const OneHopSpec base{spec.collective, spec.dtype, spec.op, static_cast<int>(rank_names.size()), spec.root,
                                device_of_rank, shape.blocks_per_rank, shape.threads_per_block};
          const KernelSource source = spec.low_latency ? low_latency_source({base, shape.max_bytes, spec.two_shot})
                                      : spec.ll128     ? ll128_source({base, shape.max_bytes})
                                                       : direct_source({base, spec.two_shot});
          built = builder->build(source, rank_names, o.codegen, o.compile, &outcome);
        } else if (spec.program) {
          built = builder->build(*spec.program, topology, rank_names, o, &outcome);
        } else {
          built = builder->build(plan, o, &outcome);
        }
        return std::pair{built, outcome};
      }));
    }
  Status status;
  for (Job& job : jobs) {
    std::vector<std::shared_ptr<const BuiltCollective>> builds;
    CacheOutcome outcome = CacheOutcome::memory_hit;
    for (auto& f : job.builds) {
      try {
        auto [built, how] = f.get();
        if (builds.empty()) outcome = how;  // the first architecture's outcome is what the log reports
        builds.push_back(built);
      } catch (const Error& e) {
        if (status.ok()) status = Status(StatusCode::compile_error, fmt::format("{}: {}", spec_text(job.spec), e.what()));
      } catch (const std::exception& e) {
        if (status.ok()) status = Status(StatusCode::internal, fmt::format("{}: {}", spec_text(job.spec), e.what()));
      }
    }
    if (!status.ok()) continue;
    try {
      load(job.spec, builds, job.archs, outcome);
    } catch (const Error& e) {
      status = Status(StatusCode::cuda_error, fmt::format("{}: {}", spec_text(job.spec), e.what()));
    }
  }
  return status;
}

CollectiveSpec Communicator::State::canonical(CollectiveSpec spec) {
  if (!spec.program) return spec;
  const algo::Program* caller = spec.program.get();
  if (auto it = program_of_caller.find(caller); it != program_of_caller.end() && same_program(*caller, *it->second)) {
    spec.program = it->second;
    return spec;
  }
  auto [it, fresh] = programs.emplace(program_key(*caller), nullptr);
  if (fresh) it->second = std::make_shared<algo::Program>(*caller);
  program_of_caller[caller] = it->second;
  program_of_caller[it->second.get()] = it->second;
  spec.program = it->second;
  return spec;
}

bool Communicator::State::find(const CollectiveSpec& given, PreparedCollective** out) {
  const auto it = prepared.find(key_of(canonical(given)));
  *out = it == prepared.end() ? nullptr : it->second.get();
  return *out != nullptr;
}

Status Communicator::State::get(const CollectiveSpec& given, PreparedCollective** out) {
  if (find(given, out)) return Status();
  const CollectiveSpec spec = canonical(given);
  const CollectiveSpec one[] = {spec};
  if (Status s = prepare(one); !s.ok()) return s;
  *out = prepared.at(key_of(spec)).get();
  return Status();
}

// The first pair of the communicator's GPUs without peer access, as text ("" when every pair has it): the one-hop
// protocols need it, as every rank touches every other's memory.
static std::string missing_peer_access(const Communicator::State& st) {
  for (std::size_t a = 0; a < st.gpus.size(); ++a)
    for (std::size_t b = 0; b < st.gpus.size(); ++b)
      if (a != b && !st.peer[a][b])
        return fmt::format("GPUs {} and {} have no peer access", st.gpus[a].ordinal, st.gpus[b].ordinal);
  return "";
}

// Fits `blocks_per_rank` (a plan-free protocol's, named `what`) to one block per SM for each rank a GPU runs, so
// every block of a launch is resident.
static void fit_blocks(Communicator::State& st, const char* what, int* blocks_per_rank) {
  const int n = static_cast<int>(st.rank_names.size());
  const int devices = static_cast<int>(st.gpus.size());
  const int per_gpu = (n + devices - 1) / devices;
  int sms = std::numeric_limits<int>::max();
  for (const GpuDevice& g : st.gpus) sms = std::min(sms, g.limits.sms);
  if (*blocks_per_rank * per_gpu > sms) {
    const int fit = std::max(1, sms / per_gpu);
    st.log.info(LogSubsys::init, fmt::format("{} kernels: {} blocks per rank instead of {}, so the {} ranks of a "
                                             "GPU fit its {} SMs at one block each",
                                             what, fit, *blocks_per_rank, per_gpu, sms));
    *blocks_per_rank = fit;
  }
}

// Why some pair of ranks cannot reach each other in one NVLink hop ("" when all can): peer access between their GPUs
// and, in the topology, an NVLink between them (directly or through one switch).
static std::string nvlink_hop_missing(const Communicator::State& st) {
  if (std::string why = missing_peer_access(st); !why.empty()) return why;
  const int n = static_cast<int>(st.rank_names.size());
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (st.device_of_rank[a] == st.device_of_rank[b]) continue;
      const std::vector<NodeId> path =
          switch_path(st.topology, *st.topology.find(st.rank_names[a]), *st.topology.find(st.rank_names[b]),
                      [](const Arc& arc) { return is_nvlink(arc); });
      if (path.empty() || path.size() > 3)
        return fmt::format("{} and {} are not one NVLink hop apart (directly or through one switch) in topology {}",
                           st.rank_names[a], st.rank_names[b], st.topology.name());
    }
  return "";
}

// Per collective, the protocol limits (State::ll_limit, ll128_limit, direct_limit): `tuned` those `canopy tune
// --protocols` chose for this machine where it chose some, else the shapes' (the options' or environment's, else the
// defaults; LL128's default is per collective unless `ll128_given`). LL128 takes only sizes above LL's limit, so where
// its limit is within LL's it takes none. The shapes' max_bytes become the largest limit of any collective: what the
// line protocols' buffers must hold.
static void set_protocol_limits(Communicator::State& st, bool tuned, bool ll128_given) {
  const int n = static_cast<int>(st.rank_names.size()), devices = static_cast<int>(st.gpus.size());
  std::vector<std::string> chosen;
  for (std::size_t c = 0; c < kCollectives; ++c) {
    const Collective collective = static_cast<Collective>(c);
    std::optional<ProtocolEntry> e;
    if (tuned) e = st.tuning->find(ProtocolKey{st.machine, collective});
    st.ll_limit[c] = e ? e->limits.ll_bytes : st.low_latency.max_bytes;
    st.ll128_limit[c] = e             ? e->limits.ll128_bytes
                        : ll128_given ? st.ll128.max_bytes
                                      : ll128_default_bytes(collective, n, devices);
    if (st.ll128_limit[c] <= st.ll_limit[c]) st.ll128_limit[c] = 0;
    st.direct_limit[c] = e ? std::optional(e->limits.direct_bytes) : std::nullopt;
    if (e) chosen.push_back(fmt::format("{}: {}", to_string(collective), describe(e->limits)));
  }
  if (!chosen.empty())
    st.log.info(LogSubsys::init, fmt::format("protocol limits tuned for this machine ({}): {}", st.tuning_path.string(),
                                             fmt::join(chosen, "; ")));
  const std::int64_t ll128_asked = st.ll128.max_bytes;
  st.low_latency.max_bytes = *std::max_element(st.ll_limit.begin(), st.ll_limit.end());
  st.ll128.max_bytes = *std::max_element(st.ll128_limit.begin(), st.ll128_limit.end());
  if (chosen.empty() && ll128_asked > 0 && st.ll128.max_bytes == 0)
    st.log.info(LogSubsys::init,
                fmt::format("LL128 protocol off: its limit {} is within the one below it ({})",
                            format_byte_size(ll128_asked), format_byte_size(st.low_latency.max_bytes)));
}

// A line protocol's buffers (low-latency, LL128) for the sizes its `limits` give it (shape->max_bytes, the largest):
// left off, its limits zeroed, when its buffers (`buffer_bytes` per rank) would take more than
// kMaxLineBufferBytesPerGpu on a GPU (they grow with the square of the ranks a GPU runs: each rank holds a slot per
// rank), or when `unusable` gives a reason; else its blocks are fitted to the GPUs.
static void set_up_line_protocol(Communicator::State& st, const char* name, const char* variable,
                                 std::int64_t (*buffer_bytes)(int, std::int64_t),
                                 std::string (*unusable)(const Communicator::State&), OneLaunchShape* shape,
                                 std::array<std::int64_t, kCollectives>* limits) {
  if (shape->max_bytes == 0) return;
  const int n = static_cast<int>(st.rank_names.size()), devices = static_cast<int>(st.gpus.size());
  const std::int64_t per_gpu = buffer_bytes(n, shape->max_bytes) * ((n + devices - 1) / devices);
  std::string why = per_gpu > kMaxLineBufferBytesPerGpu
                        ? fmt::format("its buffers would take {} per GPU for {} ranks (lower {} to use it)",
                                      format_byte_size(per_gpu), n, variable)
                        : unusable(st);
  if (!why.empty()) {
    st.log.info(LogSubsys::init, fmt::format("{} protocol off: {}", name, why));
    shape->max_bytes = 0;
    limits->fill(0);
    return;
  }
  fit_blocks(st, name, &shape->blocks_per_rank);
}

// Why the direct protocol cannot run on this communicator ("" when it can): every rank reads the others' buffers in
// one hop, so every pair of GPUs needs peer access and, in the topology, an NVLink between them (directly or through
// one switch); a PCIe hop would carry mid-size messages slower than the planned trees. Also fits its blocks: one
// per SM for each rank a GPU runs, so every block of a launch is resident.
static std::string direct_unusable(Communicator::State& st) {
  if (std::string why = nvlink_hop_missing(st); !why.empty()) return why;
  fit_blocks(st, "direct", &st.direct.blocks_per_rank);
  return "";
}

const HostPath& Communicator::State::host_path_for(Collective collective, DataType dtype, int root) {
  const std::pair<int, int> key{static_cast<int>(collective), root};
  if (auto it = host_paths.find(key); it != host_paths.end()) return it->second;
  const HostPath path = host_path(topology, plan_for(CollectiveSpec{collective, dtype, ReduceOp::sum, root}));
  // The share at `bytes` of an out-of-place call.
  const auto share_at = [&](std::uint64_t bytes) {
    const bool on_engines = engine_sized(collective, bytes / static_cast<std::uint64_t>(size_of(dtype)), dtype);
    return 100 * host_share(path, bytes, host_path_model(collective, on_engines));
  };
  log.info(LogSubsys::plan,
           path.host_gbps > 0
               ? fmt::format("{} root {}: host path {:.1f} GB/s beside the trees' {:.1f} GB/s; calls from {} stage "
                             "a share through host memory ({:.1f}% at 64 MiB, {:.1f}% at 1 GiB)",
                             call_name(collective), rank_names[root], path.host_gbps, path.trees_gbps,
                             format_byte_size(hybrid.min_bytes), share_at(std::uint64_t{64} << 20),
                             share_at(std::uint64_t{1} << 30))
               : fmt::format("{} root {}: no host path (the topology gives some rank's GPU no host link, or the "
                             "trees cross PCIe)",
                             call_name(collective), rank_names[root]));
  return host_paths.emplace(key, path).first->second;
}

bool Communicator::State::may_stage(Collective collective, DataType dtype, int root) {
  if ((collective != Collective::broadcast && collective != Collective::reduce) || hybrid.min_bytes <= 0 ||
      gpus.size() < 2 || root < 0 || root >= static_cast<int>(rank_names.size()) ||
      (collective == Collective::reduce && rank_names.size() > static_cast<std::size_t>(CombineKernels::kMaxSources)))
    return false;
  return hybrid.share ? *hybrid.share > 0 : host_path_for(collective, dtype, root).host_gbps > 0;
}

std::uint64_t Communicator::State::staged_count(Collective collective, std::uint64_t count, DataType dtype, int root,
                                                bool on_engines) {
  const auto element = static_cast<std::uint64_t>(size_of(dtype));
  if (count * element < static_cast<std::uint64_t>(hybrid.min_bytes) || !may_stage(collective, dtype, root)) return 0;
  const double share = hybrid.share ? *hybrid.share
                                    : host_share(host_path_for(collective, dtype, root), count * element,
                                                 host_path_model(collective, on_engines));
  // The kernels keep the head, rounded up to 4 KiB; the host path takes the tail.
  const std::uint64_t align = std::max<std::uint64_t>(1, 4096 / element);
  const auto kept = static_cast<std::uint64_t>(static_cast<double>(count) * (1 - share));
  const std::uint64_t head = std::min(count, (kept + align - 1) / align * align);
  return count - head;
}

Status Communicator::State::stage(const CollectiveCall& call, std::uint64_t staged,
                                  const std::vector<cudaStream_t>& streams, bool on_engines) {
  const auto element = static_cast<std::uint64_t>(size_of(call.dtype));
  const std::uint64_t offset = (call.count - staged) * element;
  const int root_device = device_of_rank[call.root];
  if (call.collective == Collective::reduce) {
    std::vector<StagedSource> sources;
    for (int r = 0; r < static_cast<int>(rank_names.size()); ++r)
      sources.push_back({device_of_rank[r], static_cast<const char*>(call.send[r]) + offset});
    void* dst = static_cast<char*>(call.recv[call.root]) + offset;
    const CombineKernels& kernels = *combine.at(gpus[root_device].arch);
    // Beside the copy engines the SMs are free: each staged chunk is combined as it lands.
    if (Status s =
            staging->reduce(root_device, dst, sources, staged * element, call.dtype, call.op, kernels, on_engines);
        !s.ok())
      return s;
    return staging->join(streams);
  }
  std::vector<StagedTarget> targets;
  for (int r = 0; r < static_cast<int>(rank_names.size()); ++r) {
    if (r == call.root && call.recv[r] == call.send[r]) continue;  // in place: the root's bytes are there
    targets.push_back({device_of_rank[r], static_cast<char*>(call.recv[r]) + offset});
  }
  const void* src = static_cast<const char*>(call.send[call.root]) + offset;
  if (Status s = staging->broadcast(root_device, src, targets, staged * element); !s.ok()) return s;
  return staging->join(streams);
}

Status Communicator::State::ready_staging(Collective collective, int root) {
  CurrentDevice keep;
  if (!staging)
    if (Status s = HostStaging::create(ordinals, &staging); !s.ok()) return s;
  if (collective != Collective::reduce) return Status();
  const CombineKernels* kernels = nullptr;
  return combine_for(gpus[device_of_rank[root]].arch, &kernels);
}

Status Communicator::State::combine_for(const std::string& arch, const CombineKernels** out) {
  if (auto it = combine.find(arch); it != combine.end()) {
    *out = it->second.get();
    return Status();
  }
  try {
    *out = (combine[arch] = std::make_unique<CombineKernels>(builder->jit(), arch)).get();
  } catch (const Error& e) {
    combine.erase(arch);
    return Status(StatusCode::cuda_error, fmt::format("combining kernels for {}: {}", arch, e.what()));
  }
  return Status();
}

bool Communicator::State::engine_collective(Collective collective) const {
  return engine.min_bytes_for(collective) > 0 &&
         (collective == Collective::broadcast || collective == Collective::reduce ||
          collective == Collective::allreduce);
}

bool Communicator::State::engine_sized(Collective collective, std::uint64_t count, DataType dtype) const {
  return engine_collective(collective) && count * static_cast<std::uint64_t>(size_of(dtype)) >=
                                              static_cast<std::uint64_t>(engine.min_bytes_for(collective));
}

Status Communicator::State::ready_engines(Collective collective) {
  CurrentDevice keep;
  if (!engines)
    if (Status s = CopyEnginePair::create({ordinal_of_rank[0], ordinal_of_rank[1]},
                                          static_cast<std::size_t>(engine.chunk_bytes), &engines);
        !s.ok())
      return s;
  if (collective == Collective::broadcast) return Status();
  const CombineKernels* kernels = nullptr;
  for (const GpuDevice& g : gpus)
    if (Status s = combine_for(g.arch, &kernels); !s.ok()) return s;
  return Status();
}

Status Communicator::State::run_on_engines(const CollectiveCall& call) {
  if (Status s = ready_engines(call.collective); !s.ok()) return s;
  const std::size_t bytes = call.count * static_cast<std::size_t>(size_of(call.dtype));
  CurrentDevice keep;
  if (Status s = engines->fork(call.streams); !s.ok()) return s;
  Status s;
  if (call.collective == Collective::broadcast) {
    s = engines->broadcast(call.root, call.send, call.recv, bytes);
  } else if (call.collective == Collective::reduce) {
    const CombineKernels* kernels = nullptr;
    s = combine_for(gpus[device_of_rank[call.root]].arch, &kernels);
    if (s.ok()) s = engines->reduce(call.root, call.send, call.recv, bytes, call.dtype, call.op, *kernels);
  } else {
    std::array<const CombineKernels*, 2> kernels{};
    for (int r = 0; r < 2; ++r)
      if (s.ok()) s = combine_for(gpus[device_of_rank[r]].arch, &kernels[r]);
    if (s.ok()) s = engines->allreduce(call.send, call.recv, bytes, call.dtype, call.op, kernels);
  }
  // What was queued is joined even after a failure, so the caller's streams never run ahead of it.
  const Status joined = engines->join(call.streams);
  if (!s.ok() || !joined.ok()) {
    broken = true;
    broken_why = !s.ok() ? s.message() : joined.message();
    return !s.ok() ? s : joined;
  }
  return Status();
}

Communicator::Communicator(std::unique_ptr<State> state) : state_(std::move(state)) {}
Communicator::~Communicator() = default;

Status Communicator::create(const CommunicatorOptions& options, std::unique_ptr<Communicator>* out) {
  auto st = std::make_unique<State>();
  st->log = Logger::from_environment();
  if (options.log_sink) st->log.set_sink(options.log_sink);
  try {
    if (options.topology) {
      st->topology = *options.topology;
      st->topology.validate();
      st->topology_source = "given";
      st->gpus = describe_gpus(options.devices);
    } else {
      st->gpus = describe_gpus(options.devices);
      std::vector<int> ordinals;
      for (const GpuDevice& g : st->gpus) ordinals.push_back(g.ordinal);
      DetectedTopology detected = detect_topology(ordinals);
      st->topology = std::move(detected.topology);
      st->topology_source = "detected from " + detected.source;
      for (const std::string& note : detected.notes) st->log.info(LogSubsys::init, "detect: " + note);
    }
    // Ranks: the chosen GPUs of the topology, in order.
    if (options.gpus.empty()) {
      for (NodeId id : st->topology.gpu_ids()) st->rank_names.push_back(st->topology.node(id).name);
    } else {
      std::string list;
      for (const std::string& g : options.gpus) list += (list.empty() ? "" : ",") + g;
      for (NodeId id : parse_gpu_list(st->topology, list)) st->rank_names.push_back(st->topology.node(id).name);
    }
    const int n = static_cast<int>(st->rank_names.size());
    if (n > kMaxCodegenRanks)
      throw Error(fmt::format("{} ranks: generated kernels take at most {}", n, kMaxCodegenRanks));
    // Devices: as given; by default as many visible GPUs as there are ranks.
    if (static_cast<int>(st->gpus.size()) > n) {
      if (!options.devices.empty())
        throw Error(fmt::format("{} devices given for {} ranks of topology {}: give at most as many devices as ranks "
                                "(more ranks than devices run as virtual ranks)",
                                st->gpus.size(), n, st->topology.name()));
      st->gpus.resize(n);
    }
    const int devices = static_cast<int>(st->gpus.size());
    st->device_of_rank = block_placement(n, devices);
    for (int r = 0; r < n; ++r) st->ordinal_of_rank.push_back(st->gpus[st->device_of_rank[r]].ordinal);
    for (const GpuDevice& g : st->gpus) st->ordinals.push_back(g.ordinal);
    st->first_rank.assign(devices, -1);
    for (int r = n - 1; r >= 0; --r) st->first_rank[st->device_of_rank[r]] = r;
    for (const GpuDevice& g : st->gpus)
      if (g.arch != st->gpus[0].arch)
        st->log.info(LogSubsys::init, fmt::format("GPUs of different architectures ({} and {}): one kernel build each",
                                                  st->gpus[0].arch, g.arch));
    st->peer = enable_peer_access(st->gpus);
    // Kernel shape: options, else environment, else defaults.
    st->shape = shape_from_environment();
    if (options.chunk_bytes) st->shape.chunk_bytes = *options.chunk_bytes;
    if (options.blocks_per_rank) st->shape.blocks_per_rank = *options.blocks_per_rank;
    if (options.threads_per_block) st->shape.threads_per_block = *options.threads_per_block;
    if (options.fifo_depth) st->shape.fifo_depth = *options.fifo_depth;
    const LargeMessageShape large = large_shape_from_environment(st->shape.blocks_per_rank);
    st->large_blocks = options.large_blocks_per_rank.value_or(large.blocks_per_rank);
    st->large_bytes = options.large_bytes.value_or(large.min_bytes);
    if (options.blocks_per_rank && !options.large_blocks_per_rank) st->large_blocks = *options.blocks_per_rank;
    check_codegen_options(st->shape, n);
    CodegenOptions large_check = st->shape;
    large_check.blocks_per_rank = st->large_blocks;
    check_codegen_options(large_check, n);
    st->builder =
        std::make_unique<Builder>(options.cache_dir ? DiskCache(*options.cache_dir) : DiskCache::from_environment());
    // What `canopy tune` chose for this machine: chunk sizes, unless the chunk is fixed, and protocol limits.
    st->chunk_fixed = options.chunk_bytes.has_value() || std::getenv("CANOPY_CHUNK") != nullptr;
    st->machine = Sha256().update(write_topo(st->topology)).hex_digest();
    st->tuning_path = TuningFile::default_path(st->builder->jit().disk().directory());
    std::string tuning_warning;
    st->tuning = std::make_unique<TuningFile>(st->tuning_path, &tuning_warning);
    if (!tuning_warning.empty()) st->log.info(LogSubsys::init, tuning_warning);
    if (!st->chunk_fixed && !st->tuning->entries().empty())
      st->log.info(LogSubsys::init, fmt::format("tuned chunk sizes from {}", st->tuning_path.string()));
    // Protocol limits: options, else the environment, else tuned for this machine, else the defaults.
    st->low_latency = low_latency_shape_from_environment();
    st->ll128 = ll128_shape_from_environment();
    st->direct = direct_shape_from_environment();
    if (options.low_latency_bytes) st->low_latency.max_bytes = *options.low_latency_bytes;
    if (options.ll128_bytes) st->ll128.max_bytes = *options.ll128_bytes;
    if (options.direct_bytes) st->direct.max_bytes = *options.direct_bytes;
    for (const auto& [name, limit] :
         {std::pair{"low-latency", st->low_latency.max_bytes}, std::pair{"LL128", st->ll128.max_bytes},
          std::pair{"direct-protocol", st->direct.max_bytes}})
      if (limit < 0) throw Error(fmt::format("{} limit {} bytes: use 0 (off) or a positive size", name, limit));
    const bool limits_given = options.low_latency_bytes || options.ll128_bytes || options.direct_bytes ||
                              std::getenv("CANOPY_LL_BYTES") || std::getenv("CANOPY_LL128_BYTES") ||
                              std::getenv("CANOPY_DIRECT_BYTES");
    set_protocol_limits(*st, options.tuned_protocols.value_or(true) && !limits_given,
                        options.ll128_bytes || std::getenv("CANOPY_LL128_BYTES"));
    // One hop from every rank to every other: every pair of GPUs needs peer access.
    set_up_line_protocol(*st, "low-latency", "CANOPY_LL_BYTES", low_latency_buffer_bytes, missing_peer_access,
                         &st->low_latency, &st->ll_limit);
    st->ll_two_shot_bytes =
        options.ll_two_shot_bytes.value_or(ll_two_shot_bytes_from_environment().value_or(ll_two_shot_default_bytes(n)));
    if (st->ll_two_shot_bytes < 0)
      throw Error(
          fmt::format("low-latency two-shot limit {} bytes: use 0 (never) or a positive size", st->ll_two_shot_bytes));
    if (st->low_latency.max_bytes > 0 && st->ll_two_shot_bytes > 0 &&
        st->ll_two_shot_bytes <= st->low_latency.max_bytes)
      st->log.info(LogSubsys::init,
                   fmt::format("low-latency allreduces from {} run two-shot", format_byte_size(st->ll_two_shot_bytes)));
    // A warp's 128-byte stores arrive whole only over NVLink: every pair of GPUs one NVLink hop apart.
    set_up_line_protocol(*st, "LL128", "CANOPY_LL128_BYTES", ll128_buffer_bytes, nvlink_hop_missing, &st->ll128,
                         &st->ll128_limit);
    if (!check_pointers_from_environment()) st->oracle.pointer = nullptr;
    st->direct_two_shot_bytes =
        options.direct_two_shot_bytes ? options.direct_two_shot_bytes : direct_two_shot_bytes_from_environment();
    if (st->direct_two_shot_bytes.value_or(0) < 0)
      throw Error(
          fmt::format("direct two-shot limit {} bytes: use 0 (never) or a positive size", *st->direct_two_shot_bytes));
    if (st->direct.max_bytes > 0) {
      const std::string why = direct_unusable(*st);
      if (!why.empty()) {
        st->log.info(LogSubsys::init, "direct protocol off: " + why);
        st->direct.max_bytes = 0;
      }
    }
    st->scratch.assign(n, nullptr);
    st->scratch_bytes.assign(n, 0);
    st->order.done.assign(devices, nullptr);
    st->order.stream_id.assign(devices, 0);
    st->order.used.assign(devices, false);
    st->order.switched.assign(devices, false);
    st->setup_stream.assign(devices, nullptr);
    CurrentDevice keep;
    for (int d = 0; d < devices; ++d) {
      CANOPY_CUDA_CHECK(cudaSetDevice(st->gpus[d].ordinal));
      CANOPY_CUDA_CHECK(cudaEventCreateWithFlags(&st->order.done[d], cudaEventDisableTiming));
      CANOPY_CUDA_CHECK(cudaStreamCreateWithFlags(&st->setup_stream[d], cudaStreamNonBlocking));
    }
    LaunchThreads threads = launch_threads_from_environment();
    if (options.launch_threads) threads.enabled = *options.launch_threads;
    if (options.launch_spin) threads.spin = *options.launch_spin;
    if (threads.spin.count() < 1)
      throw Error(fmt::format("launch_spin {} us: use at least 1 us (launch_threads = false turns the helpers off)",
                              threads.spin.count()));
    if (threads.enabled && devices > 1) st->crew = std::make_unique<LaunchCrew>(st->ordinals, threads.spin);
    st->hybrid = hybrid_shape_from_environment();
    if (options.hybrid_bytes) st->hybrid.min_bytes = *options.hybrid_bytes;
    if (options.hybrid_share) st->hybrid.share = *options.hybrid_share;
    if (st->hybrid.min_bytes < 0)
      throw Error(fmt::format("hybrid limit {} bytes: use 0 (off) or a positive size", st->hybrid.min_bytes));
    if (st->hybrid.share && !(*st->hybrid.share >= 0 && *st->hybrid.share <= 0.5))
      throw Error(
          fmt::format("hybrid share {}: use 0 to 0.5 (unset: from the topology's link rates)", *st->hybrid.share));
    st->engine = engine_shape_from_environment();
    if (options.engine_bytes) st->engine.min_bytes = *options.engine_bytes;
    if (st->engine.min_bytes && *st->engine.min_bytes < 0)
      throw Error(fmt::format("copy-engine limit {} bytes: use 0 (off) or a positive size", *st->engine.min_bytes));
    if (st->engine.min_bytes.value_or(1) > 0) {
      const std::string why = n != 2 || devices != 2 ? fmt::format(
                                                           "{} ranks on {} GPUs (they move data between two "
                                                           "ranks on two GPUs)",
                                                           n, devices)
                                                     : nvlink_hop_missing(*st);
      if (!why.empty()) {
        st->log.info(LogSubsys::init, "copy engines off: " + why);
        st->engine.min_bytes = 0;
      }
    }
    if (const std::optional<double> seconds = watchdog_seconds_from_environment())
      st->watchdog = std::make_unique<Watchdog>(*seconds, st->log, st->rank_names, st->device_of_rank);
    if (st->log.enabled(LogLevel::info, LogSubsys::init)) {
      std::string placed;
      for (int d = 0; d < devices; ++d) {
        std::vector<std::string> names;
        for (int r = 0; r < n; ++r)
          if (st->device_of_rank[r] == d) names.push_back(st->rank_names[r]);
        placed += fmt::format("{}GPU {} ({}, {}): {}", d ? "; " : "", st->gpus[d].ordinal, st->gpus[d].name,
                              st->gpus[d].arch, fmt::join(names, " "));
      }
      st->log.info(LogSubsys::init, fmt::format("topology {} ({}), {} ranks on {} GPUs{}: {}", st->topology.name(),
                                                st->topology_source, n, devices,
                                                n > devices ? " (virtual ranks)" : "", placed));
    }
  } catch (const Error& e) {
    return Status(StatusCode::invalid_argument, e.what());
  } catch (const InternalError& e) {
    return Status(StatusCode::internal, e.what());
  }
  out->reset(new Communicator(std::move(st)));
  return Status();
}

int Communicator::ranks() const { return static_cast<int>(state_->rank_names.size()); }
int Communicator::devices() const { return static_cast<int>(state_->gpus.size()); }
int Communicator::device_of_rank(int rank) const { return state_->ordinal_of_rank.at(rank); }
const std::vector<int>& Communicator::device_ordinals() const { return state_->ordinals; }
const std::vector<std::string>& Communicator::rank_names() const { return state_->rank_names; }
const Topology& Communicator::topology() const { return state_->topology; }
std::string Communicator::topology_source() const { return state_->topology_source; }

bool Communicator::is_large(Collective collective, std::uint64_t count, DataType dtype) const {
  return size_bytes(collective, count, dtype, ranks()) >= static_cast<std::uint64_t>(state_->large_bytes);
}

const std::string& Communicator::machine_key() const { return state_->machine; }
std::filesystem::path Communicator::tuning_path() const { return state_->tuning_path; }

std::int64_t Communicator::tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const {
  const State& st = *state_;
  if (st.chunk_fixed || !st.tuning || st.tuning->entries().empty()) return 0;
  const std::uint64_t bucket = tuning_bucket(size_bytes(collective, count, dtype, ranks()));
  const std::optional<TuningEntry> e = st.tuning->find({st.machine, collective, dtype, bucket});
  return e ? e->chunk_bytes : 0;
}

bool Communicator::is_low_latency(Collective collective, std::uint64_t count, DataType dtype) const {
  // The size S of nccl-tests (allgather: its output, reduce-scatter: its input), which bounds every slot: the LL
  // kernels move each rank's data in one hop at a few tens of GB/s, so what decides is the bytes a rank handles.
  const std::uint64_t bytes = size_bytes(collective, count, dtype, ranks());
  const std::int64_t limit = state_->ll_limit.at(static_cast<std::size_t>(collective));
  return limit > 0 && bytes <= static_cast<std::uint64_t>(limit);
}

bool Communicator::is_two_shot(Collective collective, std::uint64_t count, DataType dtype, bool in_place) const {
  if (ranks() < 2) return false;
  const std::uint64_t bytes = size_bytes(collective, count, dtype, ranks());
  if (is_low_latency(collective, count, dtype)) {
    const std::int64_t from = state_->ll_two_shot_bytes;
    return collective == Collective::allreduce && from > 0 && bytes >= static_cast<std::uint64_t>(from);
  }
  return is_direct(collective, count, dtype, in_place) && state_->direct_two_shot(collective, bytes, in_place);
}

bool Communicator::is_ll128(Collective collective, std::uint64_t count, DataType dtype) const {
  // As for LL, the size S bounds every slot; one rank moves nothing to others (the trees copy it locally).
  const std::uint64_t bytes = size_bytes(collective, count, dtype, ranks());
  const std::int64_t limit = state_->ll128_limit.at(static_cast<std::size_t>(collective));
  return limit > 0 && ranks() > 1 && bytes <= static_cast<std::uint64_t>(limit) &&
         !is_low_latency(collective, count, dtype);
}

bool Communicator::is_direct(Collective collective, std::uint64_t count, DataType dtype, bool in_place) const {
  const std::uint64_t bytes = size_bytes(collective, count, dtype, ranks());
  const std::uint64_t moved =
      direct_moved_bytes(collective, bytes, ranks(), state_->direct_two_shot(collective, bytes, in_place));
  // Tuned for this machine: a limit on the size S, as the line protocols'.
  const std::optional<std::int64_t> tuned = state_->direct_limit.at(static_cast<std::size_t>(collective));
  const bool within = tuned ? bytes <= static_cast<std::uint64_t>(*tuned)
                            : moved <= static_cast<std::uint64_t>(state_->direct.max_bytes);
  // One rank moves nothing to others: its call is a local copy, which the trees' kernel does with more blocks.
  return state_->direct.max_bytes > 0 && ranks() > 1 && within && !is_low_latency(collective, count, dtype) &&
         !is_ll128(collective, count, dtype) && !is_copy_engine(collective, count, dtype);
}

Protocol Communicator::protocol(Collective collective, std::uint64_t count, DataType dtype, bool in_place) const {
  if (is_low_latency(collective, count, dtype)) return Protocol::low_latency;
  if (is_ll128(collective, count, dtype)) return Protocol::ll128;
  if (is_direct(collective, count, dtype, in_place)) return Protocol::direct;
  return Protocol::planned;
}

bool Communicator::is_copy_engine(Collective collective, std::uint64_t count, DataType dtype) const {
  return state_->engine_sized(collective, count, dtype);
}

std::uint64_t Communicator::staged_count(Collective collective, std::uint64_t count, DataType dtype, int root) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->staged_count(collective, count, dtype, root, is_copy_engine(collective, count, dtype));
}

bool Communicator::is_large(const algo::Program& program, std::uint64_t count, DataType dtype) const {
  return size_bytes(program, count, dtype) >= static_cast<std::uint64_t>(state_->large_bytes);
}

Status Communicator::prepare(std::span<const CollectiveSpec> specs) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->prepare(specs);
}

Status Communicator::info(const CollectiveSpec& spec, CollectiveInfo* out) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  PreparedCollective* p = nullptr;
  if (Status s = state_->get(spec, &p); !s.ok()) return s;
  out->plan = p->built->plan;
  out->options = p->built->schedule.options;
  out->kernel = p->built->source.entry;
  out->cache_key = p->built->cache_key;
  out->outcome = p->outcome;
  out->blocks_per_device = p->blocks;
  return Status();
}

Status Communicator::run(const CollectiveCall& given) {
  State& st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.broken) return Status(StatusCode::cuda_error, st.broken_why);
  bool capturing = false;
  st.call_stream_ids.resize(st.rank_names.size());
  if (Status s = check_call(given, st.ordinal_of_rank, st.oracle, &capturing, st.call_stream_ids); !s.ok()) return s;
  if (given.count == 0) return Status();
  // Hybrid transfers: a large broadcast's or reduce's tail crosses PCIe through host memory while the kernels move the
  // rest.
  // Copy engines: on two GPUs, a large broadcast, or a reduce or allreduce out of place (the receive buffer is where
  // the other GPU's input lands).
  // Captured into a CUDA graph, every call runs on the kernels alone: their side streams and events are not captured.
  const bool on_engines = !capturing && !given.program && is_copy_engine(given.collective, given.count, given.dtype) &&
                          (given.collective == Collective::broadcast || !in_place(given));
  const std::uint64_t staged =
      given.program || capturing ? 0
                                 : st.staged_count(given.collective, given.count, given.dtype, given.root, on_engines);
  CollectiveCall call = given;
  call.count -= staged;
  std::vector<cudaStream_t> device_streams;
  if (staged > 0) {
    for (int first : st.first_rank) device_streams.push_back(given.streams[first]);
    if (Status s = st.ready_staging(given.collective, given.root); !s.ok()) return s;
    CurrentDevice keep;
    // Before the kernels are queued: the copies wait only for what came before the call.
    if (Status s = st.staging->fork(device_streams); !s.ok()) return s;
  }
  if (on_engines) {
    CurrentDevice keep;
    Status s = st.run_on_engines(call);
    if (s.ok() && st.log.enabled(LogLevel::debug, LogSubsys::run))
      st.log.debug(LogSubsys::run, fmt::format("{} count {} on the copy engines{}", call_name(call), call.count,
                                               staged ? fmt::format(", {} elements through host memory", staged) : ""));
    if (s.ok() && staged > 0) s = st.stage(given, staged, device_streams, true);
    return s;
  }
  PreparedCollective* p = nullptr;
  const CollectiveSpec spec = kernel_spec(call);
  // A capture cannot compile, allocate or wait for the GPU (cudaMalloc and stream waits are not capturable): what
  // it launches must be ready.
  if (capturing && !st.find(spec, &p))
    return Status(StatusCode::unsupported,
                  fmt::format("{}: count {} needs the kernel for {}, not loaded yet, and a CUDA graph capture cannot "
                              "compile and load one: load it with Communicator::prepare(call) before capturing (an "
                              "eager call of this size loads it too, unless the copy engines move it)",
                              call_name(call), call.count, spec_text(spec)));
  if (!p && !spec.program && st.last_prepared && spec == st.last_spec) p = st.last_prepared;
  if (!p) {
    if (Status s = st.get(spec, &p); !s.ok()) return s;
    if (!spec.program) {
      st.last_spec = spec;
      st.last_prepared = p;
    }
  }
  LaunchTarget target{st.ordinals, st.first_rank, st.scratch, &st.order};
  target.stream_id = st.call_stream_ids;
  target.crew = st.crew.get();
  target.capturing = capturing;
  st.device_epochs = st.device_epochs || capturing;  // from the first capture on, for good
  target.device_epochs = st.device_epochs;
  if (spec.low_latency || spec.ll128) {  // its memory was made when the kernel was loaded
    State::LineMemory& m = spec.low_latency ? st.ll_memory : st.ll128_memory;
    target.scratch = m.lines;
    target.flags = m.acks;
    target.launches = m.launches;
    target.epoch = &m.epoch;
  } else if (spec.direct) {
    target.flags = st.direct_flags;
    target.launches = st.direct_launches;
    target.epoch = &st.direct_epoch;
  }
  CurrentDevice keep;
  bool partial = false;
  Status s = launch(*p, call, target, &partial);
  if (partial && !capturing) {  // a failed capture leaves nothing waiting: the graph is never made
    st.broken = true;
    st.broken_why = s.message();
  }
  if (s.ok() && st.watchdog && !capturing)
    st.watchdog->watch(*p, call, st.ordinals, st.first_rank, launch_flags(*p, target),
                       st.device_epochs ? launch_counters(*p, target) : std::span<unsigned long long* const>());
  if (s.ok() && st.log.enabled(LogLevel::debug, LogSubsys::run))
    st.log.debug(LogSubsys::run, fmt::format("{} count {} launch {} of {}{}", call_name(call), call.count, p->epoch,
                                             p->built->source.entry,
                                             staged ? fmt::format(", {} elements through host memory", staged) : ""));
  if (s.ok() && staged > 0) s = st.stage(given, staged, device_streams, false);
  return s;
}

CollectiveSpec Communicator::kernel_spec(const CollectiveCall& call) {
  CollectiveSpec spec{call.collective, call.dtype, call.op, call.root, false};
  if (call.program) {
    // Not owned: canonical() copies it the first time, and only compares it with that copy afterwards.
    spec.program = std::shared_ptr<const algo::Program>(std::shared_ptr<const algo::Program>(), call.program);
    spec = state_->canonical(spec);
    spec.large = is_large(*call.program, call.count, call.dtype);
  } else {
    spec.large = is_large(call.collective, call.count, call.dtype);
  }
  if (!call.program && call.count > 0 && is_low_latency(call.collective, call.count, call.dtype)) {
    spec.low_latency = true;
    spec.two_shot = is_two_shot(call.collective, call.count, call.dtype);
  } else if (!call.program && call.count > 0 && is_ll128(call.collective, call.count, call.dtype)) {
    spec.ll128 = true;
  } else if (!call.program) {
    const bool in_place_call = in_place(call);
    if (is_direct(call.collective, call.count, call.dtype, in_place_call)) {
      spec.direct = true;
      spec.two_shot = is_two_shot(call.collective, call.count, call.dtype, in_place_call);
    }
  }
  if (!call.program && !plan_free(spec))
    spec.chunk_bytes = call.chunk_bytes > 0 ? call.chunk_bytes : tuned_chunk(call.collective, call.count, call.dtype);
  return spec;
}

Status Communicator::prepare(const CollectiveCall& call) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->broken) return Status(StatusCode::cuda_error, state_->broken_why);
  if (Status s = check_call(call, state_->ordinal_of_rank, state_->oracle); !s.ok()) return s;
  if (call.count == 0) return Status();
  PreparedCollective* p = nullptr;
  return state_->get(kernel_spec(call), &p);
}

Status Communicator::run_program(const algo::Program& program, std::span<const void* const> send,
                                 std::span<void* const> recv, std::uint64_t count, DataType dtype, ReduceOp op,
                                 std::span<const cudaStream_t> streams) {
  CollectiveCall call{Collective::allreduce, send, recv, count, dtype, op, 0, streams};
  call.program = &program;
  return run(call);
}

Status Communicator::broadcast(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                               DataType dtype, int root, std::span<const cudaStream_t> streams) {
  return run(CollectiveCall{Collective::broadcast, send, recv, count, dtype, ReduceOp::sum, root, streams});
}
Status Communicator::reduce(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                            DataType dtype, ReduceOp op, int root, std::span<const cudaStream_t> streams) {
  return run(CollectiveCall{Collective::reduce, send, recv, count, dtype, op, root, streams});
}
Status Communicator::allreduce(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                               DataType dtype, ReduceOp op, std::span<const cudaStream_t> streams) {
  return run(CollectiveCall{Collective::allreduce, send, recv, count, dtype, op, 0, streams});
}
Status Communicator::allgather(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t send_count,
                               DataType dtype, std::span<const cudaStream_t> streams) {
  return run(CollectiveCall{Collective::allgather, send, recv, send_count, dtype, ReduceOp::sum, 0, streams});
}
Status Communicator::reduce_scatter(std::span<const void* const> send, std::span<void* const> recv,
                                    std::uint64_t recv_count, DataType dtype, ReduceOp op,
                                    std::span<const cudaStream_t> streams) {
  return run(CollectiveCall{Collective::reducescatter, send, recv, recv_count, dtype, op, 0, streams});
}

}  // namespace canopy
