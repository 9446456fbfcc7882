// LocalSplits and make_local_children (local_split.hpp).
#include "nccl/comm/comm_registry.hpp"
#include "nccl/init/local_split.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>

#include "core/error.hpp"
#include "nccl/base/last_error.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "nccl/init/comm_init.hpp"
#include "nccl/real/real_comm.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy::nccl_api {

LocalSplits::Ticket LocalSplits::file(const SharedComm* shared, int local, int ranks, const SplitRequest& request) {
  std::unique_lock lock(mutex_);
  const Ticket ticket{shared, next_[{shared, local}]++};
  Round& round = rounds_[ticket];
  round.requests.resize(ranks);
  round.requests[local] = request;
  if (++round.filed < ranks) return ticket;
  std::vector<SplitRequest> all;
  for (const std::optional<SplitRequest>& r : round.requests) all.push_back(*r);
  round.result = maker_(all, &round.children, &round.why);  // under the lock: splits of a process take turns
  round.children.resize(ranks, nullptr);
  round.made = true;
  made_.notify_all();
  return ticket;
}

ncclResult_t LocalSplits::take(const Ticket& ticket, int local, std::chrono::milliseconds wait, ncclComm** out,
                               std::string* why) {
  std::unique_lock lock(mutex_);
  Round& round = rounds_[ticket];
  if (!made_.wait_for(lock, wait, [&] { return round.made; })) {
    *why = fmt::format("rank {}'s ncclCommSplit waited {} s for the other ranks this process holds of the communicator "
                       "({} of {} have called it): with several ranks in one process, call ncclCommSplit for every "
                       "one of them inside one ncclGroupStart/ncclGroupEnd, or each from a thread of its own",
                       local, wait.count() / 1000, round.filed, round.requests.size());
    return ncclInvalidUsage;
  }
  const ncclResult_t result = round.result;
  *out = result == ncclSuccess ? round.children[local] : nullptr;
  *why = round.why;
  if (++round.taken == static_cast<int>(round.requests.size())) rounds_.erase(ticket);
  return result;
}

LocalSplits& local_splits() {
  static LocalSplits* splits = new LocalSplits(make_local_children);  // never destroyed: used until exit
  return *splits;
}

ncclResult_t make_local_children(const std::vector<SplitRequest>& requests, std::vector<ncclComm*>* children,
                                 std::string* why) {
  const int n = static_cast<int>(requests.size());
  children->assign(n, nullptr);
  std::vector<std::pair<int, int>> color_key;
  for (const SplitRequest& r : requests) color_key.emplace_back(r.color, r.key);
  std::vector<SplitPlace> places;
  try {
    places = plan_split(color_key);
  } catch (const Error& e) {
    *why = fmt::format("ncclCommSplit: {}", e.what());
    return ncclInvalidArgument;
  }
  std::vector<int> colors;
  for (const SplitPlace& p : places)
    if (p.color >= 0 && std::find(colors.begin(), colors.end(), p.color) == colors.end()) colors.push_back(p.color);
  Communicator& parent = requests[0].parent->shared->communicator();
  const CurrentDevice keep;  // the caller's current GPU stays as it was, as NCCL leaves it
  for (int color : colors) {
    std::vector<int> members;  // parent ranks, in the child's rank order
    for (int r = 0; r < n; ++r)
      if (places[r].color == color) members.push_back(r);
    std::sort(members.begin(), members.end(), [&](int a, int b) { return places[a].index < places[b].index; });
    std::vector<int> device_of_rank;
    for (int r : members) device_of_rank.push_back(parent.device_of_rank(r));
    const CommunicatorOptions options = options_for_devices(device_of_rank);  // one GPU's ranks: virtual ranks again
    std::unique_ptr<Communicator> made;
    if (const Status s = Communicator::create(options, &made); !s.ok()) {
      for (ncclComm*& c : *children) delete std::exchange(c, nullptr);  // none was handed out yet
      *why = fmt::format("ncclCommSplit: color {} (parent ranks {}): {}", color, fmt::join(members, ","), s.message());
      return result_of(s.code());
    }
    const int size = static_cast<int>(members.size());
    std::vector<ncclComm*> group;  // in the child's rank order
    for (int r : members) {
      auto* child = new ncclComm();
      child->config = requests[r].config;
      child->forward = requests[r].parent->forward;
      group.push_back((*children)[r] = child);
    }
    hand_out_ranks(std::make_shared<SharedComm>(std::move(made), size, 0, size), group);
  }
  std::vector<ncclComm*> parents;
  for (const SplitRequest& r : requests) parents.push_back(r.parent);
  split_real_comms_together(parents, color_key, *children);
  for (ncclComm* c : *children)
    if (c) c->state = CommState::ready, track_handle(c);  // here: a failed color deletes the children made before it
  return ncclSuccess;
}

}  // namespace canopy::nccl_api
