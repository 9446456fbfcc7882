// The rounds through a group's bootstrap root (group_rounds.hpp): exchange, the call check's round trip, and split.
#include "runtime/comm/group_rounds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <utility>

#include "core/error.hpp"

namespace canopy {

Status exchange_in_group(ProcessGroup& group, std::mutex& mutex, CallFailure& failure, std::string mine,
                         std::vector<std::string>* all) {
  std::lock_guard<std::mutex> lock(mutex);
  if (failure.failed()) return failure.status();
  const Status s = group.bootstrap->allgather(std::move(mine), all);
  return !s.ok() && failure.failed() ? failure.status() : s;
}

Status agree_on_call(ProcessGroup& group, CallFailure& failure, const CallSignature& mine) {
  std::vector<std::string> all;
  if (Status s = group.bootstrap->allgather(describe_call(mine), &all); !s.ok())
    return failure.failed() ? failure.status() : s;
  for (std::size_t p = 0; p < all.size(); ++p)
    if (all[p] != all[0]) {
      const auto who = [&](std::size_t q) { return describe_process(group.facts[q], static_cast<int>(q), false); };
      return Status(StatusCode::invalid_argument, mismatched_calls_message(who(0), all[0], who(p), all[p]));
    }
  return Status();
}

Status split_group(ProcessGroup& g, std::mutex& mutex, CallFailure& failure, const CommunicatorLayout& layout,
                   int own_ranks, int color, int key, const CommunicatorOptions& given, const JoinPath& join,
                   std::unique_ptr<CallPath>* out) {
  std::lock_guard<std::mutex> lock(mutex);  // held through the new communicator's join, as the bootstrap's
  if (failure.failed()) return failure.status();
  std::vector<std::string> all;
  if (Status s = g.bootstrap->allgather(fmt::format("{} {}", color, key), &all); !s.ok()) return s;
  std::vector<std::pair<int, int>> color_key;
  for (std::size_t p = 0; p < all.size(); ++p) {
    std::istringstream in(all[p]);
    int c = 0, k = 0;
    if (!(in >> c >> k))
      return Status(StatusCode::remote_error,
                    fmt::format("split: process {} sent '{}', not a color and a key", p, all[p]));
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
    return Status(
        StatusCode::remote_error,
        fmt::format("split: process {} could not start the new group's bootstrap: {}", me.leader, text.substr(7)));
  UniqueId id;
  if (Status s = parse_unique_id(text, &id); !s.ok()) return s;
  CommunicatorOptions o = given;
  if (o.devices.empty()) o.devices = {layout.placement.ordinals[g.process]};
  // The other groups run on the parent's GPUs at once: a GPU keeps as many sharers as the parent counted on it (its
  // processes' own CANOPY_GPU_SHARERS included).
  o.gpu_sharers = inherited_gpu_sharers(g, o.gpu_sharers);
  if (!o.topology && layout.topology_source == "given") {
    o.topology = layout.topology;
    o.gpus.clear();
    std::vector<std::pair<int, int>> members;  // (index, process)
    for (std::size_t p = 0; p < places.size(); ++p)
      if (places[p].color == me.color) members.emplace_back(places[p].index, static_cast<int>(p));
    std::sort(members.begin(), members.end());
    for (const auto& [index, p] : members)
      for (int r = 0; r < g.facts[p].ranks; ++r)
        o.gpus.push_back(layout.placement.rank_names[g.facts[p].first_rank + r]);
  }
  const int k = own_ranks;
  return join(id, me.size * k, me.index * k, o, k, out);
}

}  // namespace canopy
