// The real NCCL's communicator beside Canopy's, for what Canopy forwards (Send/Recv, AlltoAll, Gather, Scatter where
// Canopy's point-to-point does not serve the communicator, registration, windows, device communicators, the calls
// CANOPY_NCCL_FORWARD names). It is made only where something will use it: a rank's CANOPY_NCCL_FORWARD names a call,
// or Canopy's point-to-point does not serve the communicator (several hosts: SharedComm::point_to_point_refusal()), or
// tuning.json's library choices (`canopy tune --vs-nccl`, held alike by every rank) give it some sizes, or
// CANOPY_NCCL_REAL=1 asks for it (windows, device communicators and registration go to it only then). Elsewhere Canopy
// serves every call, and the real communicator's init time and memory are spared.
//
// When it is made: at init, never later. NCCL's init is collective over every rank, but a Send is called by two ranks
// only, so making it lazily at the first forwarded call would hang; and NCCL 2.28 refuses two ranks on one GPU (unless
// each process sets its own NCCL_HOSTID), so it must not be tried there. So every ncclCommInitRank, once Canopy's
// communicator is joined, exchanges each rank's facts through it (real NCCL found, GPU UUID, NCCL_HOSTID,
// CANOPY_NCCL_REAL) and every rank takes the same decision from them: make it (rank 0's real ncclUniqueId reaches the
// others through Canopy's communicator; a blocking real init, on the init's own thread), or record why not, for the
// ncclInvalidUsage of a later forwarded call. CANOPY_NCCL_REAL=0 never makes one; =1 makes init fail where none can
// be made. ncclCommInitAll makes one with the real ncclCommInitAll over distinct GPUs; ncclCommSplit splits the
// parent's. The decision is a pure function, tested on any CPU.
#pragma once

#include <nccl.h>

#include <string>
#include <utility>
#include <vector>

#include "core/status.hpp"
#include "nccl/config/forward_list.hpp"

struct ncclComm;

namespace canopy::nccl_api {

// Why none is made where nothing would use it.
inline constexpr const char* kNothingUsesIt =
    "nothing on this communicator would use it: Canopy serves every call here (CANOPY_NCCL_FORWARD names none, and "
    "no library choice of tuning.json gives it a size); "
    "CANOPY_NCCL_REAL=1 makes one anyway, for windows, device communicators and registration";

// What one rank says of itself.
struct RealCommFacts {
  bool loaded = false;       // this process found a real NCCL
  std::string why_not;       // when not: why
  RealMode mode = RealMode::automatic;
  std::string gpu;           // its GPU's UUID (hex)
  std::string host_id;       // NCCL_HOSTID ("" when unset)
  std::string use;           // what on this rank would use a real communicator ("" nothing): the forward list, ...
  std::string choices;       // the digest of its tuning.json library choices (LibraryChoices::digest; "" none)
  int chosen = 0;            // how many sizes those choices give the real NCCL (a use, where every rank agrees)
};
std::string encode_real_facts(const RealCommFacts& facts);
Status decode_real_facts(const std::string& text, RealCommFacts* out);

struct RealCommDecision {
  bool choices_agree = true;  // every rank holds the same library choices: they apply (else none does)
  bool make = false;
  bool fail_init = false;  // CANOPY_NCCL_REAL=1 on some rank and none can be made
  std::string why_not;     // when not made
};
// The same on every rank, from every rank's facts in rank order.
RealCommDecision decide_real_comm(const std::vector<RealCommFacts>& ranks);

// After a join (every rank of the communicator calls it at the same point): agrees and makes comm->real, or records
// comm->real_why_not. ncclSuccess unless CANOPY_NCCL_REAL=1 and it could not be made (the last error says why).
ncclResult_t attach_real_comm(ncclComm* comm, const char* function);
// The handles of an in-process communicator (ncclCommInitAll, a group's inits made whole): the real ncclCommInitAll
// over `devices` when they are distinct and a real NCCL is there, else each records real_why_not. ncclSuccess unless
// CANOPY_NCCL_REAL=1 and it could not be made (the last error, prefixed by `function`, says why), as for a join.
ncclResult_t attach_real_comms(const std::vector<ncclComm*>& comms, const std::vector<int>& devices,
                               const char* function);
// ncclCommSplit of handles of this process, the real NCCL's splits beside them (every parent rank calls it: the
// real split is collective too): each parent's real communicator split, all inside one real group (one thread may
// split several of its handles only so), into children[k]->real (children[k] null: no color). The handles of one
// in-process communicator (local_split.hpp), or a group's joined handles (joined_split.hpp). A parent without one:
// its child's real_why_not says why; a failed real split: every child's.
void split_real_comms_together(const std::vector<ncclComm*>& parents, const std::vector<std::pair<int, int>>& color_key,
                               const std::vector<ncclComm*>& children);
// Destroy/Abort/Finalize: the same on comm->real (destroy and abort forget it).
ncclResult_t end_real_comm(ncclComm* comm, const char* function);

}  // namespace canopy::nccl_api
