// SharedComm: one Canopy Communicator and the NCCL handles (ranks) this process holds of it: one for
// ncclCommInitRank, several for ncclCommInitAll. NCCL takes each rank's part of a collective in a separate call
// (from one thread inside a group, or from one thread per rank); the Communicator takes every own rank's buffers in
// one call. post() files rank `local`'s part under that rank's next sequence number; the post that completes a
// sequence runs it, checking that every part asks for the same collective (a PreMulSum's parts first scale their
// inputs: premul_run.hpp), and says what ran in its CallLog (CANOPY_LOG=info); wait() returns that run's Status.
// run_alone() serves the common case of one rank a process (torchrun, mpirun) without the matching: no slot, no
// allocation, the call's buffers in arrays on the stack.
// Sends and receives (ncclSend, ncclRecv, and the calls made of them) meet in its PointToPointExchange
// (nccl/p2p/p2p_exchange.hpp) and run through Communicator::send_recv; point_to_point_refusal() says, once asked of the
// runtime, whether this communicator serves them at all (in one process and across the processes of a host, pair by
// pair; across hosts not yet: the NCCL API then passes them on as before).
// Under CANOPY_PROFILE_CALLS=1 it prints, when it goes, where the host's time went around its runs (api_profile.hpp).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "nccl/base/rank_call.hpp"
#include "nccl/diagnostics/api_profile.hpp"
#include "nccl/diagnostics/call_log.hpp"
#include "nccl/p2p/p2p_exchange.hpp"
#include "runtime/comm/communicator.hpp"

namespace canopy::nccl_api {

class SharedComm {
 public:
  // `send_recv` issues a matched group of sends and receives: when empty, the Communicator's send_recv (none without
  // a Communicator: a CPU test's SharedComm then serves no point-to-point unless it gives one).
  SharedComm(std::unique_ptr<Communicator> comm, int nranks, int first_rank, int own_ranks,
             PointToPointExchange::Runner send_recv = {});
  ~SharedComm();

  Communicator& communicator() { return *comm_; }
  const Communicator& communicator() const { return *comm_; }
  bool has_communicator() const { return comm_ != nullptr; }
  void leave_at_exit() {  // exit_guard.hpp (a SharedComm without a Communicator is a CPU test's)
    if (comm_) comm_->leave_at_exit();
  }
  CallLog& log() { return log_; }
  // Whether its Communicator spans processes (joined), whose calls may wait on the host for other ranks.
  bool across_processes() const { return comm_ && comm_->multi_process(); }
  int nranks() const { return nranks_; }
  int first_rank() const { return first_rank_; }
  int own_ranks() const { return own_ranks_; }

  using Ticket = std::uint64_t;
  Ticket post(int local, const RankCall& call);
  Status wait(Ticket ticket);
  // post() then wait() for a SharedComm of one own rank, without a slot: its Status. A PreMulSum call takes post().
  Status run_alone(const RankCall& call);

  // Why this communicator's point-to-point cannot be served by Canopy (the runtime's `unsupported` answer to an empty
  // group, asked once), or nullopt when it is. The seam where the NCCL API decides between Canopy and the real NCCL.
  std::optional<std::string> point_to_point_refusal();
  PointToPointExchange& point_to_point() { return exchange_; }

 private:
  struct Slot {
    std::vector<std::optional<RankCall>> parts;
    int posted = 0;
    int waited = 0;
    bool done = false;
    Status result;
  };
  Status run(const std::vector<std::optional<RankCall>>& parts);
  // Runs the matched call `first` on every own rank's buffers and streams (the inputs already scaled where it is a
  // PreMulSum), then logs it.
  Status issue(const RankCall& first, std::span<const void* const> send, std::span<void* const> recv,
               std::span<const cudaStream_t> streams);

  std::unique_ptr<Communicator> comm_;
  PointToPointExchange::Runner send_recv_;
  PointToPointExchange exchange_;
  std::once_flag refusal_asked_;
  std::optional<std::string> refusal_;
  CallLog log_;
  int nranks_, first_rank_, own_ranks_;
  std::mutex mutex_;
  std::condition_variable ran_;
  std::vector<Ticket> next_;  // per own rank
  std::map<Ticket, Slot> slots_;
  // CANOPY_PROFILE_CALLS=1 (api_profile.hpp): each run's time, the library's around it and the program's between.
  ApiProfile profile_;
};

}  // namespace canopy::nccl_api
