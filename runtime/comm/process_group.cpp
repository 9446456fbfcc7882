// ProcessFacts as text, their checks, and the placement of ranks on processes (see process_group.hpp).
#include "runtime/comm/process_group.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>

#include "codegen/lower.hpp"
#include "core/error.hpp"

namespace canopy {

std::string encode_process_facts(const ProcessFacts& f) {
  const GpuDevice& g = f.gpu;
  return fmt::format(
      "version={}\nhost={}\nhostname={}\npid={}\nfirst_rank={}\nranks={}\nnranks={}\nordinal={}\ngpu_name={}\narch={}\nuuid={}\n"
      "sms={}\nthreads_per_sm={}\nblocks_per_sm={}\nregisters_per_sm={}\nmemory={}\nplan_key={}\ngpu_sharers={}\n",
      f.version, f.host, f.hostname, f.pid, f.first_rank, f.ranks, f.nranks, g.ordinal, g.name, g.arch, g.uuid, g.limits.sms,
      g.limits.max_threads_per_sm, g.limits.max_blocks_per_sm, g.limits.registers_per_sm, g.memory_bytes, f.plan_key,
      f.gpu_sharers);
}

Status decode_process_facts(const std::string& text, ProcessFacts* out) {
  std::map<std::string, std::string> kv;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) return Status(StatusCode::remote_error, fmt::format("process facts: line '{}' has no '='", line));
    kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  ProcessFacts f;
  const auto text_of = [&](const char* key, std::string* v) -> Status {
    const auto it = kv.find(key);
    if (it == kv.end()) return Status(StatusCode::remote_error, fmt::format("process facts: '{}' is missing", key));
    *v = it->second;
    return Status();
  };
  const auto number = [&](const char* key, auto* v) -> Status {
    std::string t;
    if (Status s = text_of(key, &t); !s.ok()) return s;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), *v);
    if (ec != std::errc() || end != t.data() + t.size())
      return Status(StatusCode::remote_error, fmt::format("process facts: '{}' is '{}', not a number", key, t));
    return Status();
  };
  Status s;
  if (s = text_of("version", &f.version); !s.ok()) return s;
  if (s = text_of("host", &f.host); !s.ok()) return s;
  if (const auto it = kv.find("hostname"); it != kv.end()) f.hostname = it->second;
  if (s = number("pid", &f.pid); !s.ok()) return s;
  if (s = number("first_rank", &f.first_rank); !s.ok()) return s;
  if (s = number("ranks", &f.ranks); !s.ok()) return s;
  if (s = number("nranks", &f.nranks); !s.ok()) return s;
  if (s = number("ordinal", &f.gpu.ordinal); !s.ok()) return s;
  if (s = text_of("gpu_name", &f.gpu.name); !s.ok()) return s;
  if (s = text_of("arch", &f.gpu.arch); !s.ok()) return s;
  if (s = text_of("uuid", &f.gpu.uuid); !s.ok()) return s;
  if (s = number("sms", &f.gpu.limits.sms); !s.ok()) return s;
  if (s = number("threads_per_sm", &f.gpu.limits.max_threads_per_sm); !s.ok()) return s;
  if (s = number("blocks_per_sm", &f.gpu.limits.max_blocks_per_sm); !s.ok()) return s;
  if (s = number("registers_per_sm", &f.gpu.limits.registers_per_sm); !s.ok()) return s;
  if (s = number("memory", &f.gpu.memory_bytes); !s.ok()) return s;
  if (s = text_of("plan_key", &f.plan_key); !s.ok()) return s;
  if (kv.count("gpu_sharers") && !(s = number("gpu_sharers", &f.gpu_sharers)).ok()) return s;  // absent: 0
  if (f.gpu_sharers < 0)
    return Status(StatusCode::remote_error, fmt::format("process facts: 'gpu_sharers' is {}, below 0", f.gpu_sharers));
  *out = std::move(f);
  return Status();
}

std::string describe_process(const ProcessFacts& f, int process, bool where) {
  return fmt::format("process {} (rank{} {}{}{})", process, f.ranks > 1 ? "s" : "", f.first_rank,
                     f.ranks > 1 ? fmt::format("..{}", f.first_rank + f.ranks - 1) : "",
                     where ? fmt::format(", pid {} on host {}", f.pid, f.hostname.empty() ? f.host : f.hostname) : "");
}

Status check_process_facts(const std::vector<ProcessFacts>& all) {
  if (all.empty()) return Status(StatusCode::internal, "no processes");
  const ProcessFacts& first = all[0];
  const auto where = [](const ProcessFacts& f, std::size_t p) { return describe_process(f, static_cast<int>(p), true); };
  int next = 0;
  for (std::size_t p = 0; p < all.size(); ++p) {
    const ProcessFacts& f = all[p];
    if (f.version != first.version)
      return Status(StatusCode::invalid_argument,
                    fmt::format("{} runs Canopy {} but {} runs {}: run one build of Canopy in every process",
                                where(f, p), f.version, where(first, 0), first.version));
    if (f.nranks != first.nranks)
      return Status(StatusCode::invalid_argument,
                    fmt::format("{} was told the communicator has {} ranks but {} was told {}: pass the same nranks "
                                "everywhere",
                                where(f, p), f.nranks, where(first, 0), first.nranks));
    if (f.ranks < 1 || f.first_rank != next)
      return Status(StatusCode::invalid_argument,
                    fmt::format("{} holds ranks from {} but the ranks before it end at {}: each process holds the "
                                "next block of ranks, in process order (duplicate or missing rank?)",
                                where(f, p), f.first_rank, next - 1));
    next += f.ranks;
    if (f.plan_key != first.plan_key)
      return Status(StatusCode::invalid_argument,
                    fmt::format("{} would plan differently from {} (plan key {} against {}): give every process the "
                                "same topology, GPU list and kernel settings (CANOPY_CHUNK, CANOPY_BLOCKS, ...)",
                                where(f, p), where(first, 0), f.plan_key.substr(0, 16), first.plan_key.substr(0, 16)));
  }
  if (next != first.nranks)
    return Status(StatusCode::invalid_argument,
                  fmt::format("the processes hold {} ranks but the communicator has {}", next, first.nranks));
  return Status();
}

Topology shared_gpu_topology(int nranks) {
  Topology t(fmt::format("shared-gpu-{}", nranks));
  const NodeId memory = t.relay("memory");
  for (NodeId g : t.gpus(nranks)) t.link(g, memory, Bandwidth{1000, "nvlink"});
  t.validate();
  return t;
}

bool one_gpu(const std::vector<ProcessFacts>& all) {
  for (const ProcessFacts& f : all)
    if (f.gpu.uuid != all.at(0).gpu.uuid) return false;
  return true;
}

std::vector<SplitPlace> plan_split(const std::vector<std::pair<int, int>>& color_key) {
  const int n = static_cast<int>(color_key.size());
  std::vector<SplitPlace> out(n);
  std::map<int, std::vector<std::pair<int, int>>> groups;  // color -> (key, process)
  for (int p = 0; p < n; ++p) {
    const auto [color, key] = color_key[p];
    if (color < -1)
      throw Error(fmt::format("process {} gave color {}: give a color >= 0, or -1 (NCCL_SPLIT_NOCOLOR) to join no "
                              "group",
                              p, color));
    if (color >= 0) groups[color].emplace_back(key, p);
  }
  for (auto& [color, members] : groups) {
    std::sort(members.begin(), members.end());
    for (std::size_t i = 0; i < members.size(); ++i)
      out[members[i].second] = SplitPlace{color, static_cast<int>(i), static_cast<int>(members.size()),
                                          members[0].second};
  }
  return out;
}

int gpu_sharers(const std::vector<ProcessFacts>& all, const std::string& uuid) {
  int count = 0, given = 0;
  for (const ProcessFacts& o : all)
    if (o.gpu.uuid == uuid) {
      ++count;
      given = std::max(given, o.gpu_sharers);
    }
  return std::max({count, given, 1});
}

int inherited_gpu_sharers(const ProcessGroup& group, std::optional<int> given) {
  return std::max(given.value_or(0), gpu_sharers(group.facts, group.facts[group.process].gpu.uuid));
}

Placement place_processes(std::vector<std::string> rank_names, const std::vector<ProcessFacts>& all, int self,
                          const std::function<bool(const std::string&, const std::string&)>& can_reach) {
  Placement p;
  p.rank_names = std::move(rank_names);
  const int n = p.ranks();
  if (n > kMaxCodegenRanks) throw Error(fmt::format("{} ranks: generated kernels take at most {}", n, kMaxCodegenRanks));
  const int processes = static_cast<int>(all.size());
  const int ordinal = all.at(self).gpu.ordinal;
  for (const ProcessFacts& f : all) {
    GpuDevice g = f.gpu;
    g.ordinal = ordinal;
    // Processes on one GPU each launch their own grid, and those grids spin on each other: under MPS they run at
    // once, so together they must be resident. Each process fits its grid to its share of the SMs (without MPS the
    // driver time-slices the processes, and a share fits as well), at one block per SM where the lanes fit so:
    // grids of different shapes from different processes (one's trees beside another's direct kernel) do not pack
    // the SMs as blocks-per-SM arithmetic assumes, and two trees blocks per SM of a share deadlocked 4 processes on
    // an H100 under MPS. With the processes' blocks together at most the GPU's SMs, a block not yet placed always
    // finds an empty SM. (8 processes' allreduce trees, 25 lanes in a 16-SM share, still take two per SM.)
    const int sharing = gpu_sharers(all, f.gpu.uuid);
    g.limits.sms = std::max(1, g.limits.sms / sharing);
    if (sharing > 1) g.limits.preferred_blocks_per_sm = 1;
    p.gpus.push_back(g);
    p.ordinals.push_back(ordinal);
    p.first_rank.push_back(f.first_rank);
    p.here.push_back(&f == &all[self] ? 1 : 0);
    for (int r = 0; r < f.ranks; ++r) {
      p.device_of_rank.push_back(static_cast<int>(p.gpus.size()) - 1);
      p.ordinal_of_rank.push_back(ordinal);
    }
  }
  if (static_cast<int>(p.device_of_rank.size()) != n)
    throw Error(fmt::format("the processes hold {} ranks but the topology's GPU list has {}: give as many ranks as "
                            "GPUs listed",
                            p.device_of_rank.size(), n));
  p.peer.assign(processes, std::vector<bool>(processes, false));
  for (int a = 0; a < processes; ++a)
    for (int b = 0; b < processes; ++b)
      p.peer[a][b] = all[a].gpu.uuid == all[b].gpu.uuid || (can_reach && can_reach(all[a].gpu.uuid, all[b].gpu.uuid));
  return p;
}

}  // namespace canopy
