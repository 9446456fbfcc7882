// CollectiveCache: checking, building (in parallel) and loading collectives.
#include "runtime/comm/collective_cache.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <future>
#include <set>
#include <thread>

#include "codegen/direct_source.hpp"
#include "codegen/ll128_source.hpp"
#include "codegen/low_latency_source.hpp"
#include "codegen/lower_program.hpp"
#include "core/byte_size.hpp"
#include "core/error.hpp"
#include "runtime/comm/peer_access_check.hpp"
#include "runtime/comm/relay_placement.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/jit/collective_dump.hpp"
#include "runtime/protocol/protocol_memory.hpp"
#include "templates/device_args.cuh"

namespace canopy {

namespace {

// The problem with a spec the communicator cannot prepare, or ok.
Status check_spec(const CollectiveSpec& spec, int ranks, const ProtocolTable& protocols) {
  if (!spec.program && has_root(spec.collective) && (spec.root < 0 || spec.root >= ranks))
    return Status(StatusCode::invalid_argument, fmt::format("{}: root {} is not a rank: use 0 to {}",
                                                            call_name(spec.collective), spec.root, ranks - 1));
  if ((spec.low_latency && protocols.low_latency().max_bytes == 0) || (spec.ll128 && protocols.ll128().max_bytes == 0) ||
      (spec.direct && protocols.direct().max_bytes == 0))
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
  if (spec.own_buffers && (spec.program || spec.low_latency || spec.ll128))
    return Status(StatusCode::invalid_argument,
                  fmt::format("{}: own_buffers is a form of the planned trees and of the direct kernels; unset it",
                              spec_text(spec)));
  if (spec.program && spec.program->ranks() != ranks)
    return Status(StatusCode::invalid_argument,
                  fmt::format("{}: the program is written for {} ranks but the communicator has {}", spec_text(spec),
                              spec.program->ranks(), ranks));
  return Status();
}

// The source of a plan-free kernel (low-latency, LL128, direct) for `spec`, in the protocol's fitted shape; the
// one-shot direct inbox kernels in the protocol table's pieces for the collective (0: whole parts; two-shot ones move
// whole parts).
KernelSource one_hop_source(const CollectiveSpec& spec, const ProtocolTable& protocols, const Placement& placement) {
  const OneLaunchShape& shape = spec.low_latency ? protocols.low_latency()
                                : spec.ll128     ? protocols.ll128()
                                                 : protocols.direct();
  const OneHopSpec base{spec.collective,         spec.dtype,           spec.op,
                        placement.ranks(),       spec.root,            placement.device_of_rank,
                        shape.blocks_per_rank,   shape.threads_per_block};
  if (spec.low_latency) return low_latency_source({base, shape.max_bytes, spec.two_shot});
  if (spec.ll128) return ll128_source({base, shape.max_bytes});
  return direct_source(
      {base, spec.two_shot, spec.own_buffers,
       spec.own_buffers && !spec.two_shot ? protocols.inbox_piece_bytes(spec.collective) : 0});
}

}  // namespace

struct CollectiveCache::Job {
  CollectiveSpec spec;
  KernelRequest request;
  std::future<BuiltKernel> build;
};

CollectiveSpec CollectiveCache::canonical(CollectiveSpec spec) {
  if (!spec.program) return spec;
  const algo::Program* caller = spec.program.get();
  if (auto it = program_of_caller_.find(caller);
      it != program_of_caller_.end() && same_program(*caller, *it->second)) {
    spec.program = it->second;
    return spec;
  }
  auto [it, fresh] = programs_.emplace(program_key(*caller), nullptr);
  if (fresh) it->second = std::make_shared<algo::Program>(*caller);
  program_of_caller_[caller] = it->second;
  program_of_caller_[it->second.get()] = it->second;
  spec.program = it->second;
  return spec;
}

PreparedCollective* CollectiveCache::find(const CollectiveSpec& spec) {
  const auto it = prepared_.find(spec_key(canonical(spec)));
  return it == prepared_.end() ? nullptr : it->second.get();
}

void CollectiveCache::erase(const CollectiveSpec& spec) {
  last_prepared_ = nullptr;
  prepared_.erase(spec_key(canonical(spec)));
}

void CollectiveCache::clear() {
  last_prepared_ = nullptr;
  prepared_.clear();
}

// The kernel pipeline's request for a planned or program kernel: the configured shape, specialised for the spec, to
// be fitted to each GPU's limits; `own_buffers_only`: lowered so that a rank's kernel touches only its own buffers
// (CodegenOptions::own_buffers_only).
KernelRequest CollectiveCache::request_for(const CollectiveSpec& spec, KernelInput input, bool own_buffers_only) const {
  KernelRequest r;
  r.input = std::move(input);
  CodegenOptions& o = r.shape;
  o = cx_.config->shape;
  o.own_buffers_only = own_buffers_only;
  if (spec.large) o.blocks_per_rank = spec.huge ? cx_.config->huge_blocks : cx_.config->large_blocks;
  if (spec.chunk_bytes > 0) o.chunk_bytes = spec.chunk_bytes;
  o.dtype = spec.dtype;
  o.op = spec.op;
  o.device_of_rank = cx_.placement->device_of_rank;
  for (const GpuDevice& g : cx_.placement->gpus) r.limits.push_back(g.limits);
  return r;
}

// Every statement between ranks of different GPUs needs peer access both ways (the executing rank reads or writes
// the other's memory; counters are raised both ways).
void CollectiveCache::check_peers(const algo::Program& program) const {
  const Placement& p = *cx_.placement;
  for (const algo::Op& op : program.ops()) {
    const int a = p.device_of_rank[op.src.rank], b = p.device_of_rank[op.dst.rank];
    if (a != b && !(p.peer[a][b] && p.peer[b][a]))
      throw Error(fmt::format(
          "algorithm {}, line {}: {} -> {} joins GPUs {} and {}, which cannot access each other's "
          "memory (no peer access): run it on GPUs with P2P (nvidia-smi topo -p2p r)",
          program.name(), op.line, algo::to_string(op.src), algo::to_string(op.dst), p.ordinals[a], p.ordinals[b]));
  }
}

// The job of one spec: what the kernel pipeline builds (a plan-free protocol's kernel in its own shape; the planned
// trees or a program, checked against peer access) and for which GPU architectures.
Status CollectiveCache::make_job(const CollectiveSpec& spec, Job* job) {
  const Placement& p = *cx_.placement;
  job->spec = spec;
  try {
    if (plan_free(spec)) {
      const OneLaunchShape& shape = spec.low_latency ? cx_.protocols->low_latency()
                                    : spec.ll128     ? cx_.protocols->ll128()
                                                     : cx_.protocols->direct();
      CodegenOptions& o = job->request.shape;
      o.dtype = spec.dtype;
      o.op = spec.op;
      o.chunk_bytes = spec.direct ? 0 : shape.max_bytes;
      o.blocks_per_rank = shape.blocks_per_rank;
      o.threads_per_block = shape.threads_per_block;
      o.device_of_rank = p.device_of_rank;
      job->request.input = OneHopKernel{
          [this, spec] { return one_hop_source(spec, *cx_.protocols, *cx_.placement); }, p.rank_names};
    } else if (spec.program) {
      check_peers(*spec.program);
      job->request = request_for(spec, RunProgram{spec.program.get(), cx_.topology, p.rank_names});
    } else {
      const Plan& plan = cx_.plans->plan_for(spec.collective, spec.root);
      // Across processes the callers' buffers are not mapped into the peers: unstaged trees must not touch them.
      job->request = request_for(spec, plan, spec.own_buffers);
      job->request.shape = with_relays(plan, *cx_.topology, p, cx_.config->relay_memory, job->request.shape);
      std::map<std::string, int> relay_device;
      for (std::size_t k = 0; k < p.relay_names.size(); ++k) relay_device[p.relay_names[k]] = p.device_of_relay[k];
      check_peer_access(plan, p.rank_names, p.device_of_rank, p.peer, p.ordinals, relay_device);
    }
  } catch (const Error& e) {
    return Status(StatusCode::compile_error, fmt::format("{}: {}", spec_text(spec), e.what()));
  } catch (const InternalError& e) {
    return Status(StatusCode::internal, fmt::format("{}: {}", spec_text(spec), e.what()));
  }
  for (const GpuDevice& g : p.gpus)
    if (std::find(job->request.archs.begin(), job->request.archs.end(), g.arch) == job->request.archs.end())
      job->request.archs.push_back(g.arch);
  return Status();
}

// The kernel pipeline in a thread of its own (the Jit is thread-safe): plan (given), launch shape, lowering, source
// and a build per architecture.
void CollectiveCache::start_build(Job& job) {
  job.build = std::async(std::launch::async,
                         [this, request = job.request] { return build_kernel(request, &cx_.builder->jit()); });
}

Status CollectiveCache::prepare(std::span<const CollectiveSpec> specs,
                                std::vector<std::pair<CollectiveSpec, PreparedCollective*>>* loaded) {
  std::vector<Job> jobs;
  std::set<SpecKey> seen;
  for (const CollectiveSpec& given : specs) {
    const CollectiveSpec spec = canonical(given);
    const SpecKey key = spec_key(spec);
    if (prepared_.count(key) || !seen.insert(key).second) continue;
    if (Status s = check_spec(spec, cx_.placement->ranks(), *cx_.protocols); !s.ok()) return s;
    Job job;
    if (Status s = make_job(spec, &job); !s.ok()) return s;
    jobs.push_back(std::move(job));
  }
  // At most about a core's worth of builds at once (each NVRTC compile takes a thread and a few hundred MB): the
  // first `window` start now, and each job loaded starts the next.
  const std::size_t window = std::max(2u, std::thread::hardware_concurrency());
  for (std::size_t i = 0; i < jobs.size() && i < window; ++i) start_build(jobs[i]);
  // Loading on this thread, as the builds finish.
  Status status;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    Job& job = jobs[i];
    if (i + window < jobs.size()) start_build(jobs[i + window]);
    BuiltKernel built;
    try {
      built = job.build.get();
    } catch (const Error& e) {
      if (status.ok()) status = Status(StatusCode::compile_error, fmt::format("{}: {}", spec_text(job.spec), e.what()));
    } catch (const std::exception& e) {
      if (status.ok()) status = Status(StatusCode::internal, fmt::format("{}: {}", spec_text(job.spec), e.what()));
    }
    if (!status.ok()) continue;
    try {
      std::unique_ptr<PreparedCollective> p = load(job.spec, built.builds, job.request.archs, built.outcome);
      last_prepared_ = nullptr;  // an entry may be replaced
      PreparedCollective* raw = (prepared_[spec_key(job.spec)] = std::move(p)).get();
      if (loaded) loaded->emplace_back(job.spec, raw);
    } catch (const Error& e) {
      status = Status(StatusCode::cuda_error, fmt::format("{}: {}", spec_text(job.spec), e.what()));
    }
  }
  return status;
}

// Blink+: each relay participant's rings' place in its relay GPU's area (relay_rings) and its own zeroed counters on
// its device.
void CollectiveCache::load_relays(PreparedCollective& p) const {
  const Placement& pl = *cx_.placement;
  const Schedule& s = p.built->schedule;
  p.relay_rings = relay_rings(s, pl.relay_names);
  for (int r = s.ranks; r < s.participants(); ++r) {
    const std::size_t flag_bytes = std::max(1, s.resources[r].flag_count) * sizeof(unsigned long long) * kFlagStride;
    void* flags = nullptr;
    CANOPY_CUDA_CHECK(cudaSetDevice(pl.gpus[s.relays[r - s.ranks].device].ordinal));
    CANOPY_CUDA_CHECK(cudaMalloc(&flags, flag_bytes));
    p.relay_flags.push_back(flags);
    CANOPY_CUDA_CHECK(cudaMemset(flags, 0, flag_bytes));
  }
}

// The kernel of each GPU's architecture loaded there, its grid checked to be resident at once (the blocks wait on each
// other), and its own zeroed counters on every rank (through the transport, so peers can raise them).
std::unique_ptr<PreparedCollective> CollectiveCache::load(
    const CollectiveSpec& spec, const std::vector<std::shared_ptr<const BuiltCollective>>& builds,
    const std::vector<std::string>& archs, CacheOutcome outcome) {
  const Placement& pl = *cx_.placement;
  CurrentDevice keep;
  auto p = std::make_unique<PreparedCollective>();
  p->built = builds[0];
  p->outcome = outcome;
  const KernelSource& k = p->built->source;
  std::map<std::string, cudaKernel_t> by_arch;
  CANOPY_INTERNAL_ASSERT(k.launches.size() == pl.gpus.size(), "the kernel launches on another number of GPUs than the "
                                                               "placement holds");
  for (const GpuDevice& g : pl.gpus) {
    if (!by_arch.count(g.arch)) {
      const std::size_t b = std::find(archs.begin(), archs.end(), g.arch) - archs.begin();
      CANOPY_INTERNAL_ASSERT(b < builds.size(), "no build for a GPU's architecture");
      cudaLibrary_t lib{};
      CANOPY_CUDA_CHECK(cudaSetDevice(g.ordinal));
      CANOPY_CUDA_CHECK(
          cudaLibraryLoadData(&lib, builds[b]->module->cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
      p->libraries.push_back(lib);
      cudaKernel_t kernel{};
      CANOPY_CUDA_CHECK(cudaLibraryGetKernel(&kernel, lib, k.entry.c_str()));
      by_arch[g.arch] = kernel;
    }
    p->kernel.push_back(by_arch[g.arch]);
    p->blocks.push_back(k.launches[p->kernel.size() - 1].blocks);
  }
  p->threads = k.launches[0].threads;
  p->cooperative = !(plan_free(spec) && pl.ranks() == pl.devices());
  p->protocol = spec.low_latency ? PreparedCollective::Protocol::low_latency
                : spec.ll128     ? PreparedCollective::Protocol::ll128
                : spec.direct    ? PreparedCollective::Protocol::direct
                                 : PreparedCollective::Protocol::trees;
  p->collective = spec.collective;
  p->root = spec.root;
  p->two_shot = spec.two_shot;
  p->own_buffers = spec.own_buffers;
  p->blocks_per_rank = spec.low_latency ? cx_.protocols->low_latency().blocks_per_rank
                       : spec.ll128     ? cx_.protocols->ll128().blocks_per_rank
                       : spec.direct    ? cx_.protocols->direct().blocks_per_rank
                                        : 0;
  for (std::size_t d = 0; d < pl.gpus.size(); ++d) {
    CANOPY_CUDA_CHECK(cudaSetDevice(pl.gpus[d].ordinal));
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(p->kernel[d]), p->threads,
                                                      0) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;  // the cooperative launch still refuses a grid that does not fit
    }
    if (per_sm * pl.gpus[d].limits.sms < p->blocks[d])
      throw Error(fmt::format("{} needs {} resident blocks of {} threads on GPU {}, which holds {} ({} per SM): lower "
                              "CANOPY_BLOCKS or CANOPY_THREADS, or place fewer ranks on it",
                              k.entry, p->blocks[d], p->threads, pl.gpus[d].ordinal, per_sm * pl.gpus[d].limits.sms,
                              per_sm));
  }
  const auto flag_lines = [&](int r) { return std::max(1, k.resources[r].flag_count); };
  p->peers = cx_.peers;
  p->flags = cx_.peers->allocate_zeroed(
      [&](int r) { return (flag_lines(r) + 1) * sizeof(unsigned long long) * kFlagStride; });
  p->launches = launch_counters_after(p->flags, pl.first_rank, flag_lines);
  load_relays(*p);
  if (cx_.log.enabled(LogLevel::info, LogSubsys::jit)) {
    const CodegenOptions& o = p->built->schedule.options;
    cx_.log.info(LogSubsys::jit,
                 fmt::format("{}: kernel {} (chunk {}, FIFO depth {}, {} threads x {} blocks per GPU{}{}), {} (cache "
                             "entry {})",
                             spec_text(spec), k.entry, format_byte_size(o.chunk_bytes), o.fifo_depth,
                             o.threads_per_block, fmt::join(p->blocks, "/"),
                             o.min_blocks_per_sm ? fmt::format(", >= {} blocks per SM", o.min_blocks_per_sm) : "",
                             o.pull != PullEdges::none ? ", pulled edges " + to_string(o.pull) : "",
                             to_string(outcome), p->built->cache_key.substr(0, 16)));
  }
  dump_collective(*p->built);
  return p;
}

}  // namespace canopy
