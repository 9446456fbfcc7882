// PointToPointExchange (p2p_exchange.hpp): batches of one process's ranks linked into sets and issued whole.
#include "nccl/p2p/p2p_exchange.hpp"

#include <numeric>
#include <utility>

namespace canopy::nccl_api {

PointToPointExchange::PointToPointExchange(int first_rank, int own_ranks, Runner run)
    : first_rank_(first_rank), own_ranks_(own_ranks), run_(std::move(run)) {}

PointToPointExchange::Ticket PointToPointExchange::post(std::vector<PointToPoint> ops) {
  std::lock_guard lock(mutex_);
  const Ticket ticket = next_++;
  batches_[ticket].ops = std::move(ops);
  issue_if_whole(ticket);
  return ticket;
}

void PointToPointExchange::issue_if_whole(Ticket ticket) {
  // Union-find over this process's ranks (indexes from first_rank_): linked by a batch and by an op between two.
  std::vector<int> parent(own_ranks_);
  std::iota(parent.begin(), parent.end(), 0);
  const auto find = [&](int r) {
    while (parent[r] != r) r = parent[r] = parent[parent[r]];
    return r;
  };
  const auto link = [&](int a, int b) { parent[find(a)] = find(b); };
  std::vector<bool> posted(own_ranks_, false);
  for (const auto& [t, batch] : batches_) {
    if (batch.done) continue;
    int first = -1;
    for (const PointToPoint& op : batch.ops) {
      if (!own(op.rank)) continue;  // refused by the runtime when issued
      const int r = op.rank - first_rank_;
      posted[r] = true;
      if (first < 0) first = r;
      link(r, first);
      if (own(op.peer)) link(r, op.peer - first_rank_);
    }
  }
  // The set of `ticket`'s batch: every rank linked to its first. A batch without ops of this process is a set alone.
  Batch& mine = batches_[ticket];
  int root = -1;
  for (const PointToPoint& op : mine.ops)
    if (own(op.rank)) {
      root = find(op.rank - first_rank_);
      break;
    }
  const auto in_set = [&](const Batch& b) {
    for (const PointToPoint& op : b.ops)
      if (own(op.rank)) return root >= 0 && find(op.rank - first_rank_) == root;
    return false;
  };
  if (root >= 0)
    for (int r = 0; r < own_ranks_; ++r)
      if (find(r) == root && !posted[r]) return;  // a rank of the set has yet to post
  std::vector<PointToPoint> ops;
  std::vector<Batch*> members;
  for (auto& [t, batch] : batches_) {
    if (batch.done || (t != ticket && !in_set(batch))) continue;
    ops.insert(ops.end(), batch.ops.begin(), batch.ops.end());
    members.push_back(&batch);
  }
  const Status s = ops.empty() ? Status() : run_(ops);
  for (Batch* b : members) {
    b->done = true;
    b->result = s;
  }
  ran_.notify_all();
}

std::optional<Status> PointToPointExchange::result(Ticket ticket) {
  std::lock_guard lock(mutex_);
  const auto it = batches_.find(ticket);
  if (it == batches_.end() || !it->second.done) return std::nullopt;
  return it->second.result;
}

std::optional<Status> PointToPointExchange::wait(Ticket ticket, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const auto it = batches_.find(ticket);
  if (it == batches_.end()) return std::nullopt;
  if (!ran_.wait_for(lock, timeout, [&] { return it->second.done; })) {
    batches_.erase(it);
    return std::nullopt;
  }
  Status s = std::move(it->second.result);
  batches_.erase(it);
  return s;
}

bool PointToPointExchange::withdraw(Ticket ticket) {
  std::lock_guard lock(mutex_);
  const auto it = batches_.find(ticket);
  if (it == batches_.end() || it->second.done) return false;
  batches_.erase(it);
  return true;
}

}  // namespace canopy::nccl_api
