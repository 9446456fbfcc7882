// The handle ncclComm_t points at when Canopy made the communicator. nccl.h only declares `struct ncclComm`; this
// library defines it. Its first word is a magic: a handle without it is the real NCCL's and is passed to it
// (is_canopy_comm). A destroyed handle is never freed, only marked (kDestroyedMagic), so that a later call with it is
// reported instead of crashing. Beside Canopy's communicator a handle may hold the real NCCL's (`real`, made at init
// where every rank can have one: nccl/real/real_comm.hpp) for the calls Canopy forwards, and its PreMulSum operators.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "nccl/comm/shared_comm.hpp"
#include "nccl/config/forward_list.hpp"
#include "nccl/premul/premul_ops.hpp"
#include "runtime/tune/library_choices.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy::nccl_api {

constexpr std::uint64_t kCanopyCommMagic = 0x63616e6f70794e43ull;  // "CNypocna"
constexpr std::uint64_t kDestroyedMagic = 0x63616e6f70794e44ull;   // a Canopy handle after ncclCommDestroy/Abort

enum class CommState {
  pending,    // ncclCommInitRank* inside a group: joined at the outermost ncclGroupEnd
  joining,    // a non-blocking init (config blocking = 0) joining on its own thread (GetAsyncError: in progress)
  ready,
  failed,     // its init failed (init_error says why); only Destroy/Abort/GetAsyncError/GetLastError take it
  destroyed,  // ncclCommDestroy or ncclCommAbort
};

}  // namespace canopy::nccl_api

struct ncclComm {
  std::uint64_t magic = canopy::nccl_api::kCanopyCommMagic;
  // Written by a non-blocking init's thread (everything else it sets is written before, read after).
  std::atomic<canopy::nccl_api::CommState> state{canopy::nccl_api::CommState::pending};
  std::shared_ptr<canopy::nccl_api::SharedComm> shared;  // set when ready
  int nranks = 0;
  int rank = 0;     // the user's rank
  int local = 0;    // its index among shared->own_ranks()
  int device = -1;  // CUDA ordinal
  // Made by Communicator::join for ncclCommInitRank, or split from such a handle: its end goes through
  // joined_teardown() under `id` (a split child's: derived from its parent's, joined_split.hpp).
  bool joined = false;
  std::uint64_t splits = 0;  // joined: how many ncclCommSplit of it have run (its children's keys tell them apart)
  bool finalized = false;
  ncclResult_t init_result = ncclSuccess;  // failed: what init returned
  std::string init_error;                  // failed: why
  canopy::UniqueId id;                     // pending: what to join; joined: the key of its teardown
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;  // as the init read it (real_comm passes it on, blocking)
  std::thread joiner;                      // joining: the non-blocking init's thread
  ncclComm_t real = nullptr;               // the real NCCL's communicator of the same ranks, when made
  std::string real_why_not;                // why there is none ("" when there is)
  canopy::nccl_api::ForwardSet forward;    // CANOPY_NCCL_FORWARD: calls passed to `real`
  // tuning.json's per-size choice between Canopy's kernels and `real` (`canopy tune --vs-nccl`), agreed by every rank
  // at init (runtime/tune/library_choices.hpp); null: none, Canopy serves every size. Not carried to splits.
  std::shared_ptr<const canopy::LibraryChoices> choices;
  canopy::nccl_api::PreMulOps premul;      // ncclRedOpCreatePreMulSum's operators of this rank
};

namespace canopy::nccl_api {

// Whether `comm` (non-null) was made by Canopy, destroyed or not: reads its first word.
bool is_canopy_comm(const ncclComm* comm);
// ncclSuccess when `comm` is a Canopy handle that `function` may use now (ready; pending too where `pending_ok`);
// otherwise records why (null, destroyed, failed init, not yet initialised, a non-blocking init still joining:
// ncclInvalidArgument, as NCCL) and returns the code.
ncclResult_t check_comm(const ncclComm* comm, const char* function, bool pending_ok = false);
// "ncclAllReduce on communicator 0x..(rank 1 of 4)": how messages name a handle.
std::string describe(const ncclComm* comm, const char* function);

}  // namespace canopy::nccl_api
