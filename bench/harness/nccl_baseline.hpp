// NcclBaseline: NCCL loaded at run time so `canopy bench --vs-nccl` can time NCCL on the same GPUs and buffers; Canopy
// never links or needs NCCL. Its table of the functions the bench calls, filled through the one loader of NCCL
// (runtime/cuda/nccl_loader.hpp), from CANOPY_NCCL_LIBRARY, else libnccl.so.2 on the dynamic loader's path (whatever
// answers to that name: no search of Canopy's own, and no check that it is not libcanopy_nccl.so). One process, one
// rank per GPU (ncclCommInitAll), every call grouped over the GPUs; or one rank of a communicator whose ranks are
// processes (ncclGetUniqueId in one, ncclCommInitRank in each), as `canopy bench --procs` runs it.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/call/collective_call.hpp"
#include "runtime/call/point_to_point.hpp"
#include "core/status.hpp"

namespace canopy {

class LoadedNccl;

class NcclBaseline {
 public:
  // nullptr, with the reason in `why_not`, when NCCL cannot be loaded or lacks a function Canopy calls.
  static std::unique_ptr<NcclBaseline> load(std::string* why_not);
  ~NcclBaseline();
  NcclBaseline(const NcclBaseline&) = delete;
  NcclBaseline& operator=(const NcclBaseline&) = delete;

  std::string version() const;  // "2.28.3"
  std::string path() const { return path_; }

  // ncclCommInitAll over the CUDA `ordinals`: rank r on ordinals[r].
  Status init(const std::vector<int>& ordinals);
  // ncclGetUniqueId: what every process's init_rank takes (made in one, handed to the others).
  using UniqueId = std::array<char, 128>;
  Status unique_id(UniqueId* out);
  // ncclCommInitRank: this process's one rank `rank` of `nranks`, on CUDA device `ordinal`; blocks until every rank
  // has joined.
  Status init_rank(int ordinal, int nranks, int rank, const UniqueId& id);
  // One collective over every rank (ncclGroupStart / per-rank calls / ncclGroupEnd), NCCL's own conventions,
  // which CollectiveCall shares.
  Status run(const CollectiveCall& call);
  // One group of ncclSend and ncclRecv: each op on the NCCL rank op.rank - first_rank of this process (one process:
  // every rank, first_rank 0; a process of a multi-process communicator: its one rank, first_rank that rank).
  Status run_point_to_point(std::span<const PointToPoint> ops, int first_rank);

  struct Api;

 private:
  NcclBaseline() = default;
  const LoadedNccl* library_ = nullptr;  // open for the process
  std::string path_;
  std::unique_ptr<Api> api_;
  std::vector<void*> comms_;
};

}  // namespace canopy
