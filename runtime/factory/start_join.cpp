// start_join (start_join.hpp): this process described, the bootstrap group joined, every process's facts checked.
#include "runtime/factory/start_join.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <unistd.h>

#include <memory>

#include "core/sha256.hpp"
#include "core/version.hpp"
#include "topology/topo_writer.hpp"
#include "runtime/hosts/host_identity.hpp"

namespace canopy {

namespace {

// What plans and kernels depend on besides the GPUs: every process must hash the same.
std::string plan_key(const Topology& topology, const std::vector<std::string>& rank_names,
                     const CommunicatorConfig& config) {
  const CodegenOptions& o = config.shape;
  const ProtocolSettings& p = config.protocols;
  Sha256 h;
  h.update(write_topo(topology));
  for (const std::string& n : rank_names) h.update(n + ",");
  h.update(fmt::format("chunk {} depth {} blocks {} threads {} large {} {} ll {} ll128 {} direct {} fixed {}",
                       o.chunk_bytes, o.fifo_depth, o.blocks_per_rank, o.threads_per_block, config.large_bytes,
                       config.large_blocks, p.low_latency.max_bytes, p.ll128.max_bytes, p.direct.max_bytes,
                       config.chunk_fixed));
  // Only where there is a huge class, so that every key made before it existed stays as it was.
  if (config.huge_bytes > 0) h.update(fmt::format(" huge {} {}", config.huge_bytes, config.huge_blocks));
  // A limit given replaces the per-collective defaults (LL128's; the direct protocol's across GPUs), even at the
  // default's value: processes that differ there would choose other kernels. The copy engines: made or not alike.
  h.update(fmt::format(" given ll128 {} direct {} engines {}", p.ll128_given, p.direct_given,
                       p.engine.min_bytes.value_or(-1)));
  // The kernels' forms: processes that disagree would prepare other kernels and wait for each other forever.
  h.update(fmt::format(" own {} shared {} piece {}", config.own_buffers, config.stage_only_shared,
                       config.inbox_piece_bytes.value_or(-1)));
  h.update(fmt::format(" peer {}", config.peer_buffers));
  // The plan-free kernels' shapes: blocks of one launch wait for the same block of the peers' launches, so processes
  // whose block counts differ would wait forever.
  h.update(fmt::format(" shapes ll {} {} ll128 {} {} direct {} {} given {}", p.low_latency.blocks_per_rank,
                       p.low_latency.threads_per_block, p.ll128.blocks_per_rank, p.ll128.threads_per_block,
                       p.direct.blocks_per_rank, p.direct.threads_per_block, p.direct_blocks_given));
  // The host path across processes: every process must split a broadcast or reduce alike and make the rings or not.
  const HybridShape& hy = config.hybrid;
  h.update(fmt::format(" hybrid {} given {} share {}", hy.min_bytes, hy.given, hy.share ? *hy.share : -1.0));
  return h.hex_digest();
}

}  // namespace

Status start_join(const UniqueId& id, const UniqueIdContents& contents, int nranks, int rank, int own_ranks,
                  const CommunicatorOptions& options, const Logger& log, JoinStart* out) {
  JoinStart& st = *out;
  st.nranks = nranks;
  st.own_ranks = own_ranks;
  st.secret = contents.secret;
  int ordinal = 0;
  if (options.devices.empty()) {
    if (cudaGetDevice(&ordinal) != cudaSuccess) {
      const cudaError_t e = cudaGetLastError();
      return Status(StatusCode::cuda_error, fmt::format("join: no current CUDA device: {}", cudaGetErrorString(e)));
    }
  } else {
    ordinal = options.devices[0];
  }
  st.ordinal = ordinal;
  st.visible = describe_gpus({});
  const std::vector<GpuDevice>& visible = st.visible;
  if (ordinal < 0 || ordinal >= static_cast<int>(visible.size()))
    return Status(StatusCode::invalid_argument,
                  fmt::format("device {} does not exist: {} GPU{} visible (0..{})", ordinal, visible.size(),
                              visible.size() == 1 ? " is" : "s are", visible.size() - 1));
  const GpuDevice& gpu = visible[ordinal];
  if (options.topology) {  // else the processes' GPUs decide it, after the join (the way of running's)
    st.topology = *options.topology;
    st.topology.validate();
    st.topology_source = "given";
    if (Status s = name_ranks(st.topology, gpu, options.gpus, nranks, &st.rank_names); !s.ok()) return s;
  }
  st.config = resolve_config(options, nranks);
  ProcessFacts& mine = st.mine;
  mine.version = library_version();
  mine.host = host_identity();
  mine.hostname = host_name();
  mine.pid = static_cast<long>(getpid());
  mine.first_rank = rank;
  mine.ranks = own_ranks;
  mine.nranks = nranks;
  mine.gpu = gpu;
  mine.plan_key = plan_key(st.topology, st.rank_names, st.config);
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
  st.bootstrap.logger = log;
  if (Status s =
          Bootstrap::join(id, processes, group->process, encode_process_facts(mine), &group->bootstrap, st.bootstrap);
      !s.ok())
    return s;
  for (const std::string& payload : group->bootstrap->payloads()) {
    ProcessFacts f;
    if (Status s = decode_process_facts(payload, &f); !s.ok()) return s;
    group->facts.push_back(std::move(f));
  }
  if (Status s = check_process_facts(group->facts); !s.ok()) return s;
  st.group = std::move(group);
  return Status();
}

}  // namespace canopy
