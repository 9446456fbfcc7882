// join_hosts (hosts_runtime.hpp): the set-up of a communicator over several hosts, after the world's bootstrap
// exchange. Every step trades through the world bootstrap, in this order: whether each process opened the real NCCL
// (all fail together, naming the process), each host's UniqueId (made by its first process), the one-host join of
// each host's processes, each rail's ncclUniqueId (made by its first member), then ncclCommInitRank for this
// process's rails in ascending rail order (a process on several rails takes them in the order every member does).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/byte_size.hpp"
#include "core/error.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/hosts/hosts_runtime.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy {

namespace {

std::string to_hex(const nccl_abi::UniqueId& id) {
  std::string out;
  for (unsigned char c : id.internal) out += fmt::format("{:02x}", c);
  return out;
}

bool from_hex(const std::string& text, nccl_abi::UniqueId* id) {
  if (text.size() != 2 * sizeof id->internal) return false;
  for (std::size_t i = 0; i < sizeof id->internal; ++i)
    id->internal[i] = static_cast<char>(std::stoi(text.substr(2 * i, 2), nullptr, 16));
  return true;
}

std::vector<std::string> split_fields(const std::string& text) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (c == ',')
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

// Every process's `mine` (ok, or why it cannot go on) through the bootstrap: on every process, the first failure
// with `code`, naming its process; ok when every process is.
Status everyone_ok(ProcessGroup& group, const Status& mine, StatusCode code) {
  std::vector<std::string> all;
  if (Status s = group.bootstrap->allgather(mine.ok() ? "ok" : mine.message(), &all); !s.ok()) return s;
  for (std::size_t p = 0; p < all.size(); ++p)
    if (all[p] != "ok")
      return Status(code, fmt::format("{}: {}", describe_process(group.facts[p], static_cast<int>(p), true), all[p]));
  return Status();
}

// This process's CANOPY_HOSTS_PIECE_BYTES, checked against every other process's through the bootstrap: a value
// that does not parse, or differs from process 0's, fails the join on every process, naming the process.
Status agree_on_piece_bytes(ProcessGroup& group, std::uint64_t* out) {
  const char* text = std::getenv("CANOPY_HOSTS_PIECE_BYTES");
  Status parsed;
  try {
    const std::int64_t bytes = text && *text ? parse_byte_size(text, "CANOPY_HOSTS_PIECE_BYTES") : 0;
    if (bytes < 0) throw Error(fmt::format("CANOPY_HOSTS_PIECE_BYTES: '{}' is negative; give a size like 4MiB", text));
    *out = static_cast<std::uint64_t>(bytes);
  } catch (const Error& e) {
    parsed = Status(StatusCode::invalid_argument, e.what());
  }
  if (Status s = everyone_ok(group, parsed, StatusCode::invalid_argument); !s.ok()) return s;
  std::vector<std::string> all;
  if (Status s = group.bootstrap->allgather(std::to_string(*out), &all); !s.ok()) return s;
  const auto shown = [](const std::string& v) {
    return v == "0" ? std::string("unset") : format_byte_size(std::stoll(v));
  };
  for (std::size_t p = 0; p < all.size(); ++p)
    if (all[p] != all[0])
      return Status(StatusCode::invalid_argument,
                    fmt::format("{} has CANOPY_HOSTS_PIECE_BYTES {} and process 0 {}: every process must cut calls "
                                "alike, so set it the same everywhere (or nowhere)",
                                describe_process(group.facts[p], static_cast<int>(p), true), shown(all[p]),
                                shown(all[0])));
  return Status();
}

}  // namespace

bool several_hosts(const std::vector<ProcessFacts>& facts) {
  for (const ProcessFacts& f : facts)
    if (f.host != facts.at(0).host) return true;
  return false;
}

Status join_hosts(ProcessGroup& group, const CommunicatorOptions& options, int own_ranks, int ordinal,
                  const Logger& log, const JoinPath& join, std::unique_ptr<HostsRuntime>* out) {
  auto rt = std::make_unique<HostsRuntime>();
  rt->log = log;
  rt->process = group.process;
  rt->own_ranks = own_ranks;
  rt->ordinal = ordinal;
  std::vector<std::string> hosts;
  for (const ProcessFacts& f : group.facts) {
    if (f.ranks != own_ranks)
      return Status(
          StatusCode::unsupported,
          fmt::format("{} holds {} ranks and this process {}: across hosts every process holds as many "
                      "ranks",
                      describe_process(f, static_cast<int>(&f - group.facts.data()), true), f.ranks, own_ranks));
    hosts.push_back(f.host);
  }
  rt->ranks = group.facts.at(0).nranks;
  rt->layout = make_rail_layout(hosts);
  const RailLayout& l = rt->layout;
  const int h = rt->host();

  // 1. The real NCCL, in every process or in none.
  if (Status s = everyone_ok(group, open_nccl_library(&rt->nccl), StatusCode::unsupported); !s.ok()) return s;

  // CANOPY_HOSTS_PIECE_BYTES, alike in every process (the processes' phase scripts must pair up).
  if (Status s = agree_on_piece_bytes(group, &rt->piece_bytes); !s.ok()) return s;

  // 2. Each host's UniqueId, made by its first process (the root of the host's bootstrap runs there).
  std::vector<std::string> all;
  std::string mine;
  if (rt->local() == 0) {
    UniqueId id;
    if (Status s = make_unique_id(&id); !s.ok()) return s;
    mine = to_string(id);
  }
  if (Status s = group.bootstrap->allgather(mine, &all); !s.ok()) return s;
  UniqueId host_id;
  if (Status s = parse_unique_id(all[l.members[h][0]], &host_id); !s.ok()) return s;

  // 3. The inside communicator: a one-host join over this host's processes, which finds its own topology.
  CommunicatorOptions inner = options;
  inner.topology.reset();
  inner.gpus.clear();
  // Hosts simulated on one machine (CANOPY_HOST_ID) may share a GPU across hosts: count every process on it (and
  // what the processes' own CANOPY_GPU_SHARERS say).
  inner.gpu_sharers = inherited_gpu_sharers(group, options.gpu_sharers);
  if (options.topology)
    log.info(LogSubsys::init, fmt::format("topology {} is not used across hosts: each host's join finds its own",
                                          options.topology->name()));
  const int n_h = l.size_of(h);
  if (Status s = join(host_id, n_h * own_ranks, rt->local() * own_ranks, inner, own_ranks, &rt->inside); !s.ok())
    return Status(s.code(), fmt::format("joining the processes of host {} ({}): {}", h, l.hosts[h], s.message()));

  // 4. Each rail's ncclUniqueId, made by its first member.
  mine.clear();
  for (int s = 0; s < l.k; ++s) {
    if (s) mine += ',';
    if (l.rails[s][0] != rt->process) continue;
    nccl_abi::UniqueId id{};
    if (nccl_abi::Result r = rt->nccl->get_unique_id(&id); r != 0)
      return rt->nccl_status(r, fmt::format("ncclGetUniqueId for rail {}", s));
    mine += to_hex(id);
  }
  if (Status s = group.bootstrap->allgather(mine, &all); !s.ok()) return s;

  // 5. This process's rail communicators, ascending: NCCL rank = the host's index, H ranks.
  rt->rail_comms.assign(l.k, nullptr);
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess)
    return Status(StatusCode::cuda_error, fmt::format("selecting GPU {}: {}", ordinal, cudaGetErrorString(e)));
  for (int s : l.rails_of[rt->process]) {
    const std::vector<std::string> fields = split_fields(all[l.rails[s][0]]);
    nccl_abi::UniqueId id{};
    if (static_cast<int>(fields.size()) != l.k || !from_hex(fields[s], &id))
      return Status(StatusCode::internal, fmt::format("rail {}: process {} sent no NCCL id", s, l.rails[s][0]));
    nccl_abi::Comm comm = nullptr;
    if (nccl_abi::Result r = rt->nccl->comm_init_rank(&comm, l.host_count(), id, h); r != 0)
      return rt->nccl_status(r, fmt::format("ncclCommInitRank for rail {} (rank {} of {})", s, h, l.host_count()));
    rt->rail_comms[s] = comm;
  }
  if (log.enabled(LogLevel::info, LogSubsys::init)) {
    std::string rails;
    for (int s : l.rails_of[rt->process]) rails += fmt::format("{}{}", rails.empty() ? "" : ",", s);
    log.info(LogSubsys::init,
             fmt::format("{} ranks on {} hosts: {}; this process: host {} local rank {}, rail{} {}; between hosts "
                         "NCCL {} ({})",
                         rt->ranks, l.host_count(), describe_rail_layout(l), h, rt->local(),
                         l.rails_of[rt->process].size() == 1 ? "" : "s", rails, rt->nccl->version, rt->nccl->path));
  }
  *out = std::move(rt);
  return Status();
}

}  // namespace canopy
