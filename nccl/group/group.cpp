// Per-thread NCCL group state and the outermost ncclGroupEnd (group.hpp).
#include "nccl/group/group.hpp"

#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nccl/base/last_error.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "nccl/comm/local_failure.hpp"
#include "nccl/diagnostics/api_profile.hpp"
#include "nccl/group/group_point_to_point.hpp"
#include "nccl/group/group_posters.hpp"
#include "nccl/group/group_simulate.hpp"
#include "nccl/group/joined_split.hpp"
#include "nccl/init/comm_init.hpp"
#include "nccl/init/group_inits.hpp"
#include "nccl/real/real_nccl.hpp"

namespace canopy::nccl_api {

namespace {

struct GroupState {
  int depth = 0;
  int real_depth = 0;  // how deep the real NCCL's group is (<= depth)
  std::vector<ncclComm*> inits;
  std::vector<std::pair<ncclComm*, RankCall>> calls;
  std::vector<std::pair<SplitRequest, ncclComm_t*>> splits;
  std::vector<PointToPointPart> point_to_point;
  ncclResult_t error = ncclSuccess;
  std::string error_text;
  bool told = false;  // a call returned `error` to its caller: later calls into this group are refused
};
thread_local GroupState t_group;

// Makes every deferred init at once: the ranks of an id all here as one in-process communicator (group_inits.hpp),
// the others joined (each blocks until all ranks have joined), all at once (run_at_once: the first on this thread).
ncclResult_t run_inits(std::vector<ncclComm*> inits) {
  std::erase_if(inits, [](ncclComm* c) { return c->state != CommState::pending; });  // destroyed meanwhile
  if (inits.empty()) return ncclSuccess;
  std::vector<PendingInit> pending(inits.size());
  for (std::size_t k = 0; k < inits.size(); ++k) pending[k] = {inits[k]->id.bytes, inits[k]->nranks, inits[k]->rank};
  const InitPartition parts = partition_inits(pending);
  const char* function = "ncclGroupEnd (deferred ncclCommInitRank)";
  std::vector<std::function<ncclResult_t()>> jobs;
  for (const std::vector<std::size_t>& whole : parts.whole) {
    std::vector<ncclComm*> comms;
    for (std::size_t k : whole) comms.push_back(inits[k]);
    jobs.push_back([comms, function] { return init_whole(comms, function); });
  }
  for (std::size_t k : parts.joined) jobs.push_back([comm = inits[k], function] { return join_comm(comm, function); });
  std::vector<ncclResult_t> results(jobs.size(), ncclSuccess);
  std::vector<std::string> messages(jobs.size());
  std::vector<std::function<void()>> at_once;
  for (std::size_t k = 0; k < jobs.size(); ++k)
    at_once.push_back([&, k] {
      results[k] = jobs[k]();
      messages[k] = last_error();  // the running thread's own
    });
  run_at_once(at_once);
  for (std::size_t k = 0; k < jobs.size(); ++k)
    if (results[k] != ncclSuccess) return fail(results[k], messages[k]);
  return ncclSuccess;
}

// Files every split of an in-process communicator, then takes each one's child (the splits of one communicator meet
// in LocalSplits); an error is recorded prefixed by `who`.
ncclResult_t run_local_splits(const std::vector<std::pair<SplitRequest, ncclComm_t*>>& splits,
                              const std::string& who) {
  if (splits.empty()) return ncclSuccess;  // every group end comes here: no reading of the environment for nothing
  std::vector<LocalSplits::Ticket> tickets;
  for (const auto& [request, out] : splits) {
    const SharedComm* shared = request.parent->shared.get();
    tickets.push_back(local_splits().file(shared, request.parent->local, shared->own_ranks(), request));
  }
  const std::chrono::milliseconds wait = ranks_wait();
  ncclResult_t result = ncclSuccess;
  std::string why;
  for (std::size_t k = 0; k < splits.size(); ++k) {
    std::string mine;
    const ncclResult_t r =
        local_splits().take(tickets[k], splits[k].first.parent->local, wait, splits[k].second, &mine);
    if (r != ncclSuccess && result == ncclSuccess) result = r, why = mine;
  }
  return result == ncclSuccess ? ncclSuccess : fail(result, who + why);
}

// The group's splits: those of in-process communicators, then those of joined handles, all at once (joined_split.hpp).
ncclResult_t run_splits(const std::vector<std::pair<SplitRequest, ncclComm_t*>>& splits, const std::string& who) {
  std::vector<std::pair<SplitRequest, ncclComm_t*>> local, joined;
  for (const auto& s : splits) (s.first.parent->shared->own_ranks() != 1 ? local : joined).push_back(s);
  const ncclResult_t local_result = run_local_splits(local, who);
  const std::string local_text = last_error();
  const ncclResult_t joined_result = joined.empty() ? ncclSuccess : split_joined(joined, who);
  if (local_result != ncclSuccess) return fail(local_result, local_text);
  return joined_result;
}

ncclResult_t run_calls(const std::vector<std::pair<ncclComm*, RankCall>>& calls) {
  std::vector<std::pair<SharedComm*, SharedComm::Ticket>> tickets(calls.size(), {nullptr, 0});
  ncclResult_t result = ncclSuccess;
  // Which calls go to which communicator, in order; the not-ready ones fail here.
  std::map<SharedComm*, std::vector<std::size_t>> by_comm;
  // Held until the group has left them, as a single call holds its own (api_collectives.cpp): a watchdog's
  // ncclCommAbort from another thread may drop a handle's communicator while a call of the group waits.
  std::vector<std::shared_ptr<SharedComm>> held;
  bool across_processes = false;
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const auto& [comm, call] = calls[k];
    if (comm->state != CommState::ready) {
      if (result == ncclSuccess)
        result = fail(ncclInvalidUsage, fmt::format("ncclGroupEnd: {} was not issued: its communicator's "
                                                    "initialisation failed ({})",
                                                    call.function, comm->init_error));
      continue;
    }
    if (!by_comm.count(comm->shared.get())) held.push_back(comm->shared);
    by_comm[comm->shared.get()].push_back(k);
    across_processes = across_processes || comm->shared->across_processes();
  }
  const auto post_all = [&](SharedComm* shared, const std::vector<std::size_t>& ks) {
    for (std::size_t k : ks) tickets[k] = {shared, shared->post(calls[k].first->local, calls[k].second)};
  };
  if (by_comm.size() > 1 && across_processes) {
    // A communicator joined across processes runs a rank's call when it is posted and may wait there for the other
    // ranks (their handles, when the staging area grows). This thread's group holds calls of several such
    // communicators (nccl-tests -g N: this process holds one rank of each, a GPU each): one thread per communicator
    // posts its calls, so none waits for a rank whose call this thread has not posted yet.
    std::vector<std::function<void()>> jobs;
    for (const auto& [shared, ks] : by_comm)
      jobs.push_back([&post_all, shared = shared, &ks = ks] { post_all(shared, ks); });
    run_on_posters(jobs);
  } else {
    for (const auto& [shared, ks] : by_comm) post_all(shared, ks);
  }
  for (std::size_t k = 0; k < tickets.size(); ++k) {
    if (!tickets[k].first) continue;
    const Status s = tickets[k].first->wait(tickets[k].second);
    if (s.ok()) continue;
    const ncclResult_t r = to_result(s, calls[k].second.function);
    fail_communicator_on_local_error(calls[k].first, r, calls[k].second.function, last_error());
    if (result == ncclSuccess) result = r;
  }
  return result;
}

}  // namespace

int group_depth() { return t_group.depth; }

ncclResult_t group_start() {
  const InLibrary in_library;
  ++t_group.depth;
  if (t_group.real_depth > 0) {  // the real NCCL's group is open: keep it as deep as ours
    if (auto f = real_nccl<ncclResult_t (*)()>("ncclGroupStart")) {
      f();
      ++t_group.real_depth;
    }
  }
  return ncclSuccess;
}

void sync_real_group() {
  auto f = real_nccl<ncclResult_t (*)()>("ncclGroupStart");
  while (f && t_group.real_depth < t_group.depth) {
    f();
    ++t_group.real_depth;
  }
}

void defer_init(ncclComm* comm) { t_group.inits.push_back(comm); }
void defer_call(ncclComm* comm, const RankCall& call) { t_group.calls.emplace_back(comm, call); }
void defer_split(const SplitRequest& request, ncclComm_t* out) { t_group.splits.emplace_back(request, out); }
void defer_point_to_point(PointToPointPart part) { t_group.point_to_point.push_back(std::move(part)); }

ncclResult_t split_here(const SplitRequest& request, ncclComm_t* out) { return run_local_splits({{request, out}}, ""); }

void note_group_error(ncclResult_t result) {
  if (t_group.depth == 0 || result == ncclSuccess || result == ncclInProgress) return;
  if (t_group.error == ncclSuccess) {
    t_group.error = result;
    t_group.error_text = last_error();
  }
  t_group.told = true;
}

ncclResult_t defer_group_error(ncclResult_t result) {
  if (t_group.depth == 0 || result == ncclSuccess) return result;
  if (t_group.error == ncclSuccess) {
    t_group.error = result;
    t_group.error_text = last_error();
  }
  return ncclSuccess;  // ncclGroupEnd reports it
}

ncclResult_t refuse_in_failed_group(const char* function) {
  const GroupState& g = t_group;
  if (g.depth == 0 || !g.told) return ncclSuccess;
  return fail(ncclInvalidUsage, fmt::format("{}: refused: an earlier call of this thread's NCCL group failed ({}), so "
                                            "nothing of the group will be issued; end the group with ncclGroupEnd (it "
                                            "returns that error) before making more calls",
                                            function, g.error_text));
}

namespace {

// Closes the real NCCL's group level that matches ours, where it is open that deep, through its
// ncclGroupSimulateEnd (which closes a level without issuing anything, and writes its estimate into
// `*real_estimate_us` at the outermost) where this is a simulation, or where an error means nothing of the group may be
// issued at the outermost level; through its ncclGroupEnd otherwise.
ncclResult_t close_real_level(GroupState& g, bool simulate, float* real_estimate_us) {
  if (g.real_depth != g.depth) return ncclSuccess;
  --g.real_depth;
  if (simulate || (g.error != ncclSuccess && g.depth == 1)) {
    if (auto f = real_nccl<ncclResult_t (*)(ncclSimInfo_t*)>("ncclGroupSimulateEnd")) {
      ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
      const ncclResult_t r = f(&info);
      if (r == ncclSuccess && info.estimatedTime >= 0) *real_estimate_us = info.estimatedTime;
      return r;
    }
  }
  if (auto f = real_nccl<ncclResult_t (*)()>("ncclGroupEnd")) return f();
  return ncclSuccess;
}

// ncclGroupEnd and ncclGroupSimulateEnd (`simulate`: the collectives are dropped, their estimate written to `info`).
ncclResult_t end_group(const char* function, bool simulate, ncclSimInfo_t* info) {
  const InLibrary in_library;
  GroupState& g = t_group;
  if (g.depth == 0)
    return fail(ncclInvalidUsage, fmt::format("{}: no group is open on this thread: every {} must follow its own "
                                              "ncclGroupStart",
                                              function, function));
  float real_estimate_us = 0;
  const ncclResult_t real_result = close_real_level(g, simulate, &real_estimate_us);
  if (--g.depth > 0) return ncclSuccess;
  std::vector<ncclComm*> inits = std::move(g.inits);
  std::vector<std::pair<ncclComm*, RankCall>> calls = std::move(g.calls);
  std::vector<std::pair<SplitRequest, ncclComm_t*>> splits = std::move(g.splits);
  std::vector<PointToPointPart> point_to_point = std::move(g.point_to_point);
  const ncclResult_t earlier = g.error;
  const std::string earlier_text = std::move(g.error_text);
  g = GroupState{};
  const ncclResult_t init_result = run_inits(inits);
  const std::string init_text = last_error();
  if (earlier != ncclSuccess) {
    // Not issued here, but the other processes issue theirs: communicators spanning processes fail (local_failure).
    for (const auto& [comm, call] : calls)
      fail_communicator_on_local_error(comm, earlier, call.function,
                                       "not issued: another call of its group failed: " + earlier_text);
    for (const PointToPointPart& part : point_to_point)
      fail_communicator_on_local_error(part.comm, earlier, part.function,
                                       "not issued: another call of its group failed: " + earlier_text);
    return fail(earlier, fmt::format("{}: a call inside the group failed, so nothing of the group was issued: {}",
                                     function, earlier_text));
  }
  const ncclResult_t split_result = run_splits(splits, fmt::format("{} (deferred ncclCommSplit): ", function));
  const std::string split_text = last_error();
  if (simulate) {
    info->estimatedTime = real_estimate_us + estimate_us(calls);
    if (init_result != ncclSuccess) return fail(init_result, init_text);
    if (split_result != ncclSuccess) return fail(split_result, split_text);
    return real_result;
  }
  // Sends and receives first: posting never waits, and a refusal found then (every rank of the set is in this group:
  // a send without its receive, counts that differ) leaves the collectives unissued.
  const std::string who = point_to_point.empty() ? std::string() : fmt::format("{}: ", function);
  std::optional<PostedPointToPoint> posted;
  if (!point_to_point.empty()) {
    posted.emplace(std::move(point_to_point));
    if (const ncclResult_t r = posted->failed_at_post(who); r != ncclSuccess) {
      const std::string text = last_error();
      for (const auto& [comm, call] : calls)
        fail_communicator_on_local_error(comm, r, call.function,
                                         "not issued: another call of its group failed: " + text);
      return fail(r, fmt::format("{} (nothing else of the group was issued)", text));
    }
  }
  const ncclResult_t call_result = run_calls(calls);
  const std::string call_text = last_error();
  const ncclResult_t p2p_result = posted ? posted->wait(who) : ncclSuccess;
  if (init_result != ncclSuccess) return fail(init_result, init_text);
  if (split_result != ncclSuccess) return fail(split_result, split_text);
  if (call_result != ncclSuccess) return fail(call_result, call_text);
  if (p2p_result != ncclSuccess) return p2p_result;
  return real_result;
}

}  // namespace

ncclResult_t group_end() { return end_group("ncclGroupEnd", false, nullptr); }

ncclResult_t group_simulate_end(ncclSimInfo_t* info) {
  if (!info) return end_group("ncclGroupSimulateEnd", false, nullptr);  // as NCCL: a plain ncclGroupEnd
  const ncclSimInfo_t fresh = NCCL_SIM_INFO_INITIALIZER;
  if (info->magic != fresh.magic)
    return fail(ncclInvalidArgument, fmt::format("ncclGroupSimulateEnd: simInfo's magic is {:#x}, not {:#x}: "
                                                 "initialise it with NCCL_SIM_INFO_INITIALIZER",
                                                 info->magic, fresh.magic));
  return end_group("ncclGroupSimulateEnd", true, info);
}

}  // namespace canopy::nccl_api
