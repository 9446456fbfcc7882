// ncclGroupStart/End with NCCL's semantics, per thread: groups nest (a count); calls inside one are checked when made
// and issued at the outermost ncclGroupEnd: first the deferred inits (every rank of an id made here: one in-process
// communicator, group_inits.hpp; the other handles joined at once, one thread each), then the splits (of in-process
// communicators, local_split.hpp; of joined handles at once, joined_split.hpp), then the sends and receives Canopy
// serves (posted to their communicators' exchanges: group_point_to_point.hpp), then the collectives, each rank's part
// posted to its SharedComm, then all waited for. The real NCCL's group is kept at the same depth once a
// forwarded call needs it.
//
// Errors, as NCCL's (docs/nccl-api.md "Errors inside a group"): a call that fails inside a group makes the outermost
// ncclGroupEnd return that error; nothing of the group is issued (Canopy's calls are dropped, the real NCCL's group is
// closed with its ncclGroupSimulateEnd, which issues nothing), and the thread's group state is reset. An argument
// error is returned by the call itself too (note_group_error); after that, every later call made into the same group
// fails at once (refuse_in_failed_group): a caller that threw on the first error and never ends the group would
// otherwise see its later collectives queued forever, returning success with nothing done. A call Canopy cannot
// serve (no real NCCL beside it) returns ncclSuccess inside a group and is reported by ncclGroupEnd
// (defer_group_error), as NCCL reports what it finds when it issues a group: a caller's ncclGroupEnd then always runs.
// ncclGroupSimulateEnd closes a group as ncclGroupEnd does but issues none of its collectives (inits and splits
// run), and writes an estimate of their time (group_simulate.hpp).
#pragma once

#include <nccl.h>

#include "nccl/base/rank_call.hpp"
#include "nccl/group/group_point_to_point.hpp"
#include "nccl/init/local_split.hpp"

namespace canopy::nccl_api {

int group_depth();
ncclResult_t group_start();
ncclResult_t group_end();
void defer_init(ncclComm* comm);
void defer_call(ncclComm* comm, const RankCall& call);
// ncclSend, ncclRecv, ncclAlltoAll, ncclGather, ncclScatter served by Canopy inside a group: issued at the outermost
// ncclGroupEnd, after the splits and before the collectives.
void defer_point_to_point(PointToPointPart part);
// ncclCommSplit inside a group: made at the outermost ncclGroupEnd, after the deferred inits and before the
// collectives; *out is written then.
void defer_split(const SplitRequest& request, ncclComm_t* out);
// The same outside a group: files it and waits (CANOPY_BOOTSTRAP_TIMEOUT_S) for the communicator's other ranks.
ncclResult_t split_here(const SplitRequest& request, ncclComm_t* out);
// A call inside the group failed with `result` and returned it to its caller (its message is already the last
// error): ncclGroupEnd returns it, and later calls into the group are refused (refuse_in_failed_group).
void note_group_error(ncclResult_t result);
// A call inside the group cannot be served (its message is already the last error): it returns ncclSuccess, and
// ncclGroupEnd returns `result` and issues nothing. Outside a group, returns `result` as it is.
ncclResult_t defer_group_error(ncclResult_t result);
// ncclSuccess, unless this thread's group already returned an error to a caller: then `function` fails at once with
// that error (recorded as the last error, naming the first failure).
ncclResult_t refuse_in_failed_group(const char* function);
// ncclGroupSimulateEnd: `info` null is a plain ncclGroupEnd (as NCCL); otherwise checked (NCCL_SIM_INFO_INITIALIZER),
// the group closed as ncclGroupEnd closes it, with its collectives dropped, and info->estimatedTime written.
ncclResult_t group_simulate_end(ncclSimInfo_t* info);
// Before a call is forwarded to the real NCCL: opens its group as deep as ours.
void sync_real_group();

}  // namespace canopy::nccl_api
