// Canopy communicators behind ncclCommInitRank* and ncclCommInitAll (comm_init.hpp).
#include "nccl/comm_init.hpp"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "nccl/comm_handle.hpp"
#include "nccl/last_error.hpp"
#include "runtime/comm/communicator.hpp"

namespace canopy::nccl_api {

ncclComm* new_pending_comm(int nranks, int rank, const UniqueId& id, int device) {
  auto* comm = new ncclComm();
  comm->nranks = nranks;
  comm->rank = rank;
  comm->device = device;
  comm->id = id;
  return comm;
}

ncclResult_t join_comm(ncclComm* comm, const char* function) {
  CommunicatorOptions options;
  if (comm->device >= 0) options.devices = {comm->device};
  std::unique_ptr<Communicator> communicator;
  const Status s = Communicator::join(comm->id, comm->nranks, comm->rank, options, &communicator);
  if (!s.ok()) {
    comm->state = CommState::failed;
    comm->init_result = result_of(s.code());
    comm->init_error = s.message();
    return to_result(s, function);
  }
  comm->shared = std::make_shared<SharedComm>(std::move(communicator), comm->nranks, comm->rank, 1);
  comm->local = 0;
  comm->state = CommState::ready;
  return ncclSuccess;
}

ncclResult_t init_all(ncclComm_t* comms, int ndev, const int* devlist) {
  if (!comms) return fail(ncclInvalidArgument, "ncclCommInitAll: comm is NULL: pass an array of ndev ncclComm_t");
  if (ndev < 1) return fail(ncclInvalidArgument, fmt::format("ncclCommInitAll: ndev is {}: it must be at least 1", ndev));
  CommunicatorOptions options;
  for (int r = 0; r < ndev; ++r) {
    const int device = devlist ? devlist[r] : r;
    if (device < 0)
      return fail(ncclInvalidArgument, fmt::format("ncclCommInitAll: devlist[{}] is {}: not a CUDA device", r, device));
    options.devices.push_back(device);
  }
  std::unique_ptr<Communicator> communicator;
  if (const Status s = Communicator::create(options, &communicator); !s.ok()) return to_result(s, "ncclCommInitAll");
  auto shared = std::make_shared<SharedComm>(std::move(communicator), ndev, 0, ndev);
  for (int r = 0; r < ndev; ++r) {
    auto* comm = new ncclComm();
    comm->nranks = ndev;
    comm->rank = r;
    comm->local = r;
    comm->device = shared->communicator().device_of_rank(r);
    comm->shared = shared;
    comm->state = CommState::ready;
    comms[r] = comm;
  }
  return ncclSuccess;
}

}  // namespace canopy::nccl_api
