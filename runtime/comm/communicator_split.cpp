// Communicator::split: the processes trade (color, key) through the parent's bootstrap, each group's first process
// makes the group's UniqueId and the ids are traded the same way, then every process with a color joins its group
// (Communicator::join) on its own GPU, with the parent's topology and the group's rank names when the parent was given
// a topology.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "core/error.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/communicator_state.hpp"

namespace canopy {

Status LegacyCallPath::split(int color, int key, const CommunicatorOptions& given, const JoinPath& join,
                             std::unique_ptr<CallPath>* out) {
  LegacyState& st = *state_;
  out->reset();
  if (!st.group)
    return Status(StatusCode::unsupported,
                  "split is for communicators joined across processes (Communicator::join); a single-process "
                  "communicator makes a subset of its GPUs with CommunicatorOptions::gpus");
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.failed) return st.failure_status();
  ProcessGroup& g = *st.group;
  std::vector<std::string> all;
  if (Status s = g.bootstrap->allgather(fmt::format("{} {}", color, key), &all); !s.ok()) return s;
  std::vector<std::pair<int, int>> color_key;
  for (std::size_t p = 0; p < all.size(); ++p) {
    std::istringstream in(all[p]);
    int c = 0, k = 0;
    if (!(in >> c >> k))
      return Status(StatusCode::remote_error, fmt::format("split: process {} sent '{}', not a color and a key", p, all[p]));
    color_key.emplace_back(c, k);
  }
  std::vector<SplitPlace> places;
  try {
    places = plan_split(color_key);
  } catch (const Error& e) {
    return Status(StatusCode::invalid_argument, fmt::format("split: {}", e.what()));
  }
  const SplitPlace me = places[g.process];
  // Each group's first process makes its id (a root in that process); every process takes part in the trade.
  std::string mine;
  if (me.color >= 0 && me.leader == g.process) {
    UniqueId id;
    const Status made = make_unique_id(&id);
    mine = made.ok() ? to_string(id) : "error: " + made.message();
  }
  if (Status s = g.bootstrap->allgather(mine, &all); !s.ok()) return s;
  if (me.color < 0) return Status();
  const std::string& text = all[me.leader];
  if (text.rfind("error: ", 0) == 0)
    return Status(StatusCode::remote_error,
                  fmt::format("split: process {} could not start the new group's bootstrap: {}", me.leader,
                              text.substr(7)));
  UniqueId id;
  if (Status s = parse_unique_id(text, &id); !s.ok()) return s;
  CommunicatorOptions o = given;
  if (o.devices.empty()) o.devices = {st.placement.ordinals[g.process]};
  // The other groups run on the parent's GPUs at once: a GPU keeps as many sharers as the parent counted on it (its
  // processes' own CANOPY_GPU_SHARERS included).
  o.gpu_sharers = inherited_gpu_sharers(g, o.gpu_sharers);
  if (!o.topology && st.topology_source == "given") {
    o.topology = st.topology;
    o.gpus.clear();
    std::vector<std::pair<int, int>> members;  // (index, process)
    for (std::size_t p = 0; p < places.size(); ++p)
      if (places[p].color == me.color) members.emplace_back(places[p].index, static_cast<int>(p));
    std::sort(members.begin(), members.end());
    for (const auto& [index, p] : members)
      for (int r = 0; r < g.facts[p].ranks; ++r)
        o.gpus.push_back(st.placement.rank_names[g.facts[p].first_rank + r]);
  }
  const int k = st.own_ranks();
  return join(id, me.size * k, me.index * k, o, k, out);
}

}  // namespace canopy
