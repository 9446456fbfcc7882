// HostsRuntime: what a communicator over several hosts holds beside the world's bootstrap group (docs/multi-host.md,
// "Runtime"): the inside communicator of this process's host (a one-host join over the host's processes, behind the
// CallPath interface: Canopy's trees, shared memory, plans), the real NCCL (nccl_library.hpp) and one NCCL
// communicator per rail this process is on (rail s: local rank s mod n_h of every host; its NCCL rank is the host's
// index). A call runs the phases of its collective (hosts_phases.cpp) on the caller's stream, in stream order (or,
// cut into pieces, the rails on a stream of its own, CANOPY_HOSTS_PIECE_BYTES). Made by join_hosts (hosts_join.cpp)
// when the processes' hosts differ; held by HostsCallPath (hosts_call_path.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "core/logger.hpp"
#include "core/status.hpp"
#include "runtime/call/collective_call.hpp"
#include "runtime/comm/call_path.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/hosts/nccl_library.hpp"
#include "runtime/hosts/rail_layout.hpp"

namespace canopy {

struct HostsRuntime {
  Logger log;
  RailLayout layout;
  int process = 0;                       // this process, in the world's process order
  int own_ranks = 1;                     // ranks per process (every process holds as many)
  int ranks = 0;                         // the world's ranks
  int ordinal = 0;                       // this process's CUDA device
  std::unique_ptr<CallPath> inside;  // this host's processes (n_h x own_ranks ranks)
  const NcclLibrary* nccl = nullptr;
  std::vector<nccl_abi::Comm> rail_comms;  // per rail: this process's NCCL communicator, null where not a member
  // CANOPY_HOSTS_PIECE_BYTES (0: off): allreduces, broadcasts and reduces of more bytes are cut into pieces of about
  // this size (at most kMaxPieces), the rails of one piece on `rail_stream` while the next piece's inside phase runs
  // on the caller's stream. Agreed at join (every process must cut alike).
  std::uint64_t piece_bytes = 0;
  static constexpr int kMaxPieces = 16;
  cudaStream_t rail_stream = nullptr;  // made with the first pipelined call

  ~HostsRuntime();  // destroys the NCCL communicators, then the inside communicator
  int host() const { return layout.host_of[process]; }
  int local() const { return layout.local_of[process]; }
  int first_rank_of(int p) const { return p * own_ranks; }  // a process's first world rank
  // The world call `call` (this process's ranks' buffers and streams, checked by the caller), avg included.
  Status run(const CollectiveCall& call);
  // abort(): every NCCL communicator is aborted (ncclCommAbort) and the inside communicator aborted or failed
  // for `why`; later calls fail (the world's HostsCallPath says why).
  void abort(const std::string& why, bool aborted);
  // The first asynchronous error of the NCCL communicators or the inside communicator, else ok.
  Status async_error();
  // out[j] = in[j] * scalar on this process's GPU (PreMulSum): through the inside communicator, rank `rank` of the
  // world being one of this process's.
  Status scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype, const void* device_scalar,
               const void* host_scalar, cudaStream_t stream);
  // Divides `count` elements at `data` by the world's ranks on `stream` (avg), with the inside communicator's
  // combining kernels.
  Status divide(void* data, std::uint64_t count, DataType dtype, cudaStream_t stream);
  // Checks an NCCL call's result: ok, or the error naming the phase (and the communicator is to be failed).
  Status nccl_status(nccl_abi::Result r, const std::string& what) const;
  // How many pieces a call of `collective` over `bytes` (count x element size) is cut into (1: not cut).
  int pieces_for(Collective collective, std::uint64_t bytes) const;
  // The inside communicator's rank of this process's own rank i.
  int inside_rank(int i) const { return local() * own_ranks + i; }
};

// Join steps of a world whose processes (group.facts) run on several hosts: the layout, the inside communicator (this
// host's processes, joined through `join`), the NCCL library and the rail communicators, every exchange through the
// world bootstrap. `options`: the world's (devices as given; a topology given is not used across hosts: each host's
// join finds its own). Fails with an error naming CANOPY_NCCL_LIBRARY when no real NCCL can be opened.
Status join_hosts(ProcessGroup& group, const CommunicatorOptions& options, int own_ranks, int ordinal,
                  const Logger& log, const JoinPath& join, std::unique_ptr<HostsRuntime>* out);

// Whether the processes of `facts` run on more than one host.
bool several_hosts(const std::vector<ProcessFacts>& facts);

}  // namespace canopy
