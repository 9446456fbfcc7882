// Making Canopy communicators behind NCCL's init calls: a pending handle for ncclCommInitRank (joined at once, or at
// the outermost ncclGroupEnd when the call was inside a group), and the handles of one in-process communicator for
// ncclCommInitAll.
#pragma once

#include <nccl.h>

#include <memory>
#include <vector>

#include "nccl/comm/shared_comm.hpp"
#include "nccl/config/forward_list.hpp"
#include "runtime/comm/communicator_options.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy::nccl_api {

// Checks CANOPY_NCCL_REAL and reads CANOPY_NCCL_FORWARD for an init (`function` names it in the error).
ncclResult_t read_environment(const char* function, ForwardSet* forward);
// A new handle in state pending: rank `rank` of `nranks`, on CUDA device `device`, to join the bootstrap `id` names.
ncclComm* new_pending_comm(int nranks, int rank, const UniqueId& id, int device);
// Joins a pending handle (Communicator::join, blocking until every rank has), then makes the real NCCL's
// communicator beside it where every rank can have one (real_comm.hpp); it ends ready, or failed with the reason
// recorded (also as this thread's last error, prefixed by `function`).
ncclResult_t join_comm(ncclComm* comm, const char* function);
// A non-blocking init (config blocking = 0): the handle is `joining` while join_comm runs on a thread of its own (on
// the handle's device); ncclCommGetAsyncError reports ncclInProgress until the state is ready or failed.
void start_join(ncclComm* comm, const char* function);
// Waits for a non-blocking init's thread (Destroy and Abort of a handle still joining wait for it).
void finish_join(ncclComm* comm);
// Makes handles[r] rank r of the in-process communicator `shared` (its rank count, rank, local index, device and the
// SharedComm); ncclCommInitAll's handles, a group's inits made whole, and the children of a local split.
void hand_out_ranks(const std::shared_ptr<SharedComm>& shared, const std::vector<ncclComm*>& handles);
// Every rank of one unique id, pending in this process (group_inits.hpp), in rank order: one in-process communicator
// over their devices (Communicator::create, as ncclCommInitAll), each handle ready with its rank, the real NCCL's
// beside them as ncclCommInitAll makes it, and the id's bootstrap root, when this process started it, retired. On an
// error every handle ends failed with the reason.
ncclResult_t init_whole(const std::vector<ncclComm*>& comms, const char* function);
// The options of an in-process communicator whose rank r runs on CUDA device device_of_rank[r]: those devices; or,
// where every rank of several names one device (devlist {0, 0, 0}), that device alone with the ranks as its virtual
// ranks, planned over shared_gpu_topology (runtime/comm/process_group.hpp) as processes sharing a GPU are (NCCL refuses
// a GPU listed twice; Canopy serves it; splits of such a communicator likewise). Other repeated devices are refused by
// Communicator::create, naming them.
CommunicatorOptions options_for_devices(const std::vector<int>& device_of_rank);
// ncclCommInitAll: one communicator over `ndev` devices (devlist, or 0 .. ndev - 1; every rank on one: virtual
// ranks, above), a ready handle per rank (and the real ncclCommInitAll's beside them where the devices are distinct).
ncclResult_t init_all(ncclComm_t* comms, int ndev, const int* devlist);

}  // namespace canopy::nccl_api
