// SharedComm (shared_comm.hpp): matches every own rank's part of a collective and runs them as one Communicator call.
#include "nccl/comm/shared_comm.hpp"

#include <fmt/format.h>

#include "nccl/comm/exit_guard.hpp"
#include "nccl/premul/premul_run.hpp"

namespace canopy::nccl_api {

namespace {

PointToPointExchange::Runner send_recv_of(Communicator* comm, PointToPointExchange::Runner given) {
  if (given || !comm) return given;
  return [comm](std::span<const PointToPoint> ops) { return comm->send_recv(ops); };
}

}  // namespace

SharedComm::SharedComm(std::unique_ptr<Communicator> comm, int nranks, int first_rank, int own_ranks,
                       PointToPointExchange::Runner send_recv)
    : comm_(std::move(comm)),
      send_recv_(send_recv_of(comm_.get(), std::move(send_recv))),
      exchange_(first_rank, own_ranks, [this](std::span<const PointToPoint> ops) { return send_recv_(ops); }),
      nranks_(nranks),
      first_rank_(first_rank),
      own_ranks_(own_ranks),
      next_(own_ranks, 0) {
  track_at_exit(this);
}

std::optional<std::string> SharedComm::point_to_point_refusal() {
  std::call_once(refusal_asked_, [&] {
    if (!send_recv_) {
      refusal_ = "this communicator has no point-to-point path";
      return;
    }
    // An empty group moves nothing and involves no other process (only the peers take part in a send and its
    // receive): only the way of running answers.
    const Status s = send_recv_({});
    if (s.code() == StatusCode::unsupported) refusal_ = s.message();
  });
  return refusal_;
}

SharedComm::~SharedComm() {
  untrack_at_exit(this);
  if (api_profile_on() && profile_.runs() > 0)
    fmt::print(stderr, "canopy: nccl profile of ranks {}..{} of {}: {}\n", first_rank_, first_rank_ + own_ranks_ - 1,
               nranks_, profile_.report());
}

SharedComm::Ticket SharedComm::post(int local, const RankCall& call) {
  std::unique_lock lock(mutex_);
  const Ticket ticket = next_[local]++;
  Slot& slot = slots_[ticket];
  slot.parts.resize(own_ranks_);
  slot.parts[local] = call;
  if (++slot.posted == own_ranks_) {
    // The last part: run it here (holding the lock keeps the communicator's calls in sequence order).
    slot.result = run(slot.parts);
    slot.done = true;
    ran_.notify_all();
  }
  return ticket;
}

Status SharedComm::wait(Ticket ticket) {
  std::unique_lock lock(mutex_);
  auto it = slots_.find(ticket);
  ran_.wait(lock, [&] { return it->second.done; });
  Status result = it->second.result;
  if (++it->second.waited == own_ranks_) slots_.erase(it);
  return result;
}

Status SharedComm::run(const std::vector<std::optional<RankCall>>& parts) {
  const RankCall& first = *parts[0];
  for (int k = 1; k < own_ranks_; ++k) {
    const RankCall& p = *parts[k];
    if (p.collective != first.collective || p.count != first.count || p.dtype != first.dtype || p.op != first.op ||
        p.root != first.root || p.premul != first.premul)
      return Status(StatusCode::invalid_argument,
                    fmt::format("rank {} called {} (count {}, {}, {}, root {}) where rank {} called {} (count {}, {}, "
                                "{}, root {}) as the same collective of this communicator: every rank must make the "
                                "same calls in the same order",
                                first_rank_ + k, p.function, p.count, to_string(p.dtype), to_string(p.op), p.root,
                                first_rank_, first.function, first.count, to_string(first.dtype),
                                to_string(first.op), first.root));
  }
  std::vector<const void*> send(own_ranks_);
  std::vector<void*> recv(own_ranks_);
  std::vector<cudaStream_t> streams(own_ranks_);
  for (int k = 0; k < own_ranks_; ++k) {
    send[k] = parts[k]->send;
    recv[k] = parts[k]->recv;
    streams[k] = parts[k]->stream;
  }
  PreMulScratch scratch;
  if (first.premul)
    if (Status s = scratch.scale(*comm_, first_rank_, parts, send); !s.ok()) return s;
  Status s = issue(first, send, recv, streams);
  scratch.release();
  return s;
}

Status SharedComm::run_alone(const RankCall& call) {
  std::lock_guard lock(mutex_);  // one call at a time, as post() runs them
  const void* const send[1] = {call.send};
  void* const recv[1] = {call.recv};
  const cudaStream_t streams[1] = {call.stream};
  return issue(call, send, recv, streams);
}

Status SharedComm::issue(const RankCall& first, std::span<const void* const> send, std::span<void* const> recv,
                         std::span<const cudaStream_t> streams) {
  CollectiveCall call;
  call.collective = first.collective;
  call.send = send;
  call.recv = recv;
  call.count = first.count;
  call.dtype = first.dtype;
  call.op = first.op;
  call.root = first.root;
  call.streams = streams;
  const bool profiling = api_profile_on();
  if (profiling) profile_.begin();
  Status s = comm_->run(call);
  if (profiling) profile_.end();
  if (s.ok() && log_.on()) {
    const bool in_place = first.send == first.recv;
    const std::uint64_t bytes = size_bytes(first.collective, first.count, first.dtype, nranks_);
    log_.note(first.function, first.datatype, bytes, first_rank_, nranks_, [&] {
      std::string text = "served by Canopy, " +
                         choice_text(comm_->choice(first.collective, first.count, first.dtype, first.root, in_place));
      if (first.premul) text += " (PreMulSum: inputs scaled on the GPU, then summed)";
      return text;
    });
  }
  return s;
}

}  // namespace canopy::nccl_api
