// ncclGroupStart/End with NCCL's semantics, per thread: groups nest (a count); calls inside one are checked when made
// and issued at the outermost ncclGroupEnd: first the deferred inits (every rank of an id made here: one in-process
// communicator, group_inits.hpp; the other handles joined at once, one thread each), then the splits (of in-process
// communicators, local_split.hpp; of joined handles at once, joined_split.hpp), then the collectives, each
// rank's part posted to its SharedComm, then waited for. A call that failed inside the group makes ncclGroupEnd fail
// too, and its collectives are dropped. The real NCCL's group is kept at the same depth once a forwarded call needs it.
#pragma once

#include <nccl.h>

#include "nccl/local_split.hpp"
#include "nccl/rank_call.hpp"

namespace canopy::nccl_api {

int group_depth();
ncclResult_t group_start();
ncclResult_t group_end();
void defer_init(ncclComm* comm);
void defer_call(ncclComm* comm, const RankCall& call);
// ncclCommSplit inside a group: made at the outermost ncclGroupEnd, after the deferred inits and before the
// collectives; *out is written then.
void defer_split(const SplitRequest& request, ncclComm_t* out);
// The same outside a group: files it and waits (CANOPY_BOOTSTRAP_TIMEOUT_S) for the communicator's other ranks.
ncclResult_t split_here(const SplitRequest& request, ncclComm_t* out);
// A call inside the group failed with `result` (its message is already the last error): ncclGroupEnd returns it.
void note_group_error(ncclResult_t result);
// Before a call is forwarded to the real NCCL: opens its group as deep as ours.
void sync_real_group();

}  // namespace canopy::nccl_api
