// Making Canopy communicators behind NCCL's init calls: a pending handle for ncclCommInitRank (joined at once, or at
// the outermost ncclGroupEnd when the call was inside a group), and the handles of one in-process communicator for
// ncclCommInitAll.
#pragma once

#include <nccl.h>

#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy::nccl_api {

// A new handle in state pending: rank `rank` of `nranks`, on CUDA device `device`, to join the bootstrap `id` names.
ncclComm* new_pending_comm(int nranks, int rank, const UniqueId& id, int device);
// Joins a pending handle (Communicator::join, blocking until every rank has); it ends ready, or failed with the
// reason recorded (also as this thread's last error, prefixed by `function`).
ncclResult_t join_comm(ncclComm* comm, const char* function);
// ncclCommInitAll: one communicator over `ndev` devices (devlist, or 0 .. ndev - 1), a ready handle per rank.
ncclResult_t init_all(ncclComm_t* comms, int ndev, const int* devlist);

}  // namespace canopy::nccl_api
