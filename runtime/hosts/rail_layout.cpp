// Hosts, local ranks, rails and shards of a multi-host communicator (rail_layout.hpp).
#include "runtime/hosts/rail_layout.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace canopy {

RailLayout make_rail_layout(const std::vector<std::string>& host_of_process) {
  if (host_of_process.empty()) throw Error("rail layout: no processes");
  RailLayout l;
  const int processes = static_cast<int>(host_of_process.size());
  for (int p = 0; p < processes; ++p) {
    const auto it = std::find(l.hosts.begin(), l.hosts.end(), host_of_process[p]);
    int h = static_cast<int>(it - l.hosts.begin());
    if (it == l.hosts.end()) {
      l.hosts.push_back(host_of_process[p]);
      l.members.emplace_back();
    }
    l.host_of.push_back(h);
    l.local_of.push_back(static_cast<int>(l.members[h].size()));
    l.members[h].push_back(p);
  }
  for (const std::vector<int>& m : l.members) l.k = std::max(l.k, static_cast<int>(m.size()));
  l.rails.resize(l.k);
  l.rails_of.resize(processes);
  for (int s = 0; s < l.k; ++s)
    for (int h = 0; h < l.host_count(); ++h) {
      const int p = l.owner(h, s);
      l.rails[s].push_back(p);
      l.rails_of[p].push_back(s);
    }
  return l;
}

ElementRange shard_range(std::uint64_t count, int k, int s) {
  if (k < 1 || s < 0 || s >= k) throw InternalError(fmt::format("shard {} of {}", s, k));
  const std::uint64_t kk = static_cast<std::uint64_t>(k), ss = static_cast<std::uint64_t>(s);
  const std::uint64_t base = count / kk, extra = count % kk;
  ElementRange r;
  r.begin = ss * base + std::min(ss, extra);
  r.end = r.begin + base + (ss < extra ? 1 : 0);
  return r;
}

std::string describe_rail_layout(const RailLayout& l) {
  std::string out;
  for (int h = 0; h < l.host_count(); ++h) {
    std::string ps;
    for (int p : l.members[h]) ps += fmt::format("{}p{}", ps.empty() ? "" : ",", p);
    out += fmt::format("{}host{}={}({})", h ? " " : "", h, l.hosts[h], ps);
  }
  out += fmt::format("; {} rail{}:", l.k, l.k == 1 ? "" : "s");
  for (int s = 0; s < l.k; ++s) {
    std::string ps;
    for (int p : l.rails[s]) ps += fmt::format("{}p{}", ps.empty() ? "" : ",", p);
    out += fmt::format(" {}={{{}}}", s, ps);
  }
  return out;
}

}  // namespace canopy
