// PointToPointExchange: where the sends and receives of one process's ranks of a communicator meet before they are
// issued. NCCL takes each rank's sends and receives in calls of their own: one thread's group may hold every rank's
// (ncclCommInitAll, then a group over the ranks), or each rank's thread makes its own, in a group or alone (a lone
// ncclSend is a group of one, matched by the peer's lone ncclRecv). The runtime's send_recv takes a group whose
// sends all meet their receives. So a thread posts its batch (its group's ops of this communicator) and waits: the
// batches whose ranks are linked (by a batch holding both, or by an op between them) make one set, issued together as
// one send_recv as soon as every rank of this process in the set has posted; a rank of another process (a peer beyond
// this process's ranks) links nothing and is left to the runtime. A set's every rank having posted, its ops are
// issued whether they match or not: a rank whose thread waits here can add nothing more (NCCL allows one thread at a
// time a rank), so the runtime's refusal (a send without its receive, counts that differ) is the answer, at once. A
// batch whose set waits for a rank that never posts is withdrawn after the caller's timeout. Issued under the
// exchange's lock, in posting order: the sets of a communicator run one at a time. Pure host code (the runner is
// given), tested on any CPU.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "core/status.hpp"
#include "runtime/call/point_to_point.hpp"

namespace canopy::nccl_api {

class PointToPointExchange {
 public:
  using Runner = std::function<Status(std::span<const PointToPoint>)>;
  using Ticket = std::uint64_t;

  // This process's ranks: first_rank .. first_rank + own_ranks - 1; `run` issues a matched set (send_recv).
  PointToPointExchange(int first_rank, int own_ranks, Runner run);

  // Files one thread's ops (every op's rank one of this process's, none of them waiting in another batch) and issues
  // the set it completes, if any. Its ticket.
  Ticket post(std::vector<PointToPoint> ops);
  // Whether the batch has been issued (its set ran), and then its Status.
  std::optional<Status> result(Ticket ticket);
  // Waits up to `timeout` for the batch to be issued: its set's Status, or nullopt when it timed out (the batch is
  // then withdrawn: nothing of it will run).
  std::optional<Status> wait(Ticket ticket, std::chrono::milliseconds timeout);
  // Takes back a batch not yet issued; false when it has run (wait() then gives its Status).
  bool withdraw(Ticket ticket);

 private:
  struct Batch {
    std::vector<PointToPoint> ops;
    bool done = false;
    Status result;
  };
  bool own(int rank) const { return rank >= first_rank_ && rank < first_rank_ + own_ranks_; }
  // Issues the set holding `ticket`'s batch when each of its own ranks has posted (lock held).
  void issue_if_whole(Ticket ticket);

  const int first_rank_, own_ranks_;
  const Runner run_;
  std::mutex mutex_;
  std::condition_variable ran_;
  Ticket next_ = 0;
  std::map<Ticket, Batch> batches_;  // posted; erased when waited for or withdrawn
};

}  // namespace canopy::nccl_api
