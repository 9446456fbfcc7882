// Canopy communicators behind ncclCommInitRank* and ncclCommInitAll, and the real NCCL's beside them
// (comm_init.hpp).
#include "nccl/comm_init.hpp"

#include <fmt/format.h>

#include <cuda_runtime_api.h>

#include <memory>
#include <thread>
#include <vector>

#include "nccl/comm_handle.hpp"
#include "nccl/last_error.hpp"
#include "nccl/real_comm.hpp"
#include "runtime/comm/communicator.hpp"

namespace canopy::nccl_api {

ncclResult_t read_environment(const char* function, ForwardSet* forward) {
  RealMode mode;
  if (Status s = real_mode_from_environment(&mode); !s.ok()) return to_result(s, function);
  if (Status s = forward_list_from_environment(forward); !s.ok()) return to_result(s, function);
  return ncclSuccess;
}

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
    comm->init_result = result_of(s.code());
    comm->init_error = s.message();
    comm->state = CommState::failed;  // last: a non-blocking init's reader sees the rest once it sees this
    return to_result(s, function);
  }
  comm->shared = std::make_shared<SharedComm>(std::move(communicator), comm->nranks, comm->rank, 1);
  comm->local = 0;
  if (const ncclResult_t r = attach_real_comm(comm, function); r != ncclSuccess) {
    comm->init_result = r;
    comm->init_error = last_error();
    comm->shared.reset();
    comm->state = CommState::failed;
    return r;
  }
  comm->state = CommState::ready;
  return ncclSuccess;
}

void start_join(ncclComm* comm, const char* function) {
  comm->state = CommState::joining;
  comm->joiner = std::thread([comm, function] {
    if (comm->device >= 0 && cudaSetDevice(comm->device) != cudaSuccess) (void)cudaGetLastError();
    (void)join_comm(comm, function);  // ends ready or failed (state written last)
  });
}

void finish_join(ncclComm* comm) {
  if (comm->joiner.joinable() && comm->joiner.get_id() != std::this_thread::get_id()) comm->joiner.join();
}

ncclResult_t init_all(ncclComm_t* comms, int ndev, const int* devlist) {
  if (!comms) return fail(ncclInvalidArgument, "ncclCommInitAll: comm is NULL: pass an array of ndev ncclComm_t");
  if (ndev < 1) return fail(ncclInvalidArgument, fmt::format("ncclCommInitAll: ndev is {}: it must be at least 1", ndev));
  ForwardSet forward;
  if (const ncclResult_t r = read_environment("ncclCommInitAll", &forward); r != ncclSuccess) return r;
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
    comm->forward = forward;
    comm->state = CommState::ready;
    comms[r] = comm;
  }
  attach_real_comms(comms, options.devices);
  return ncclSuccess;
}

}  // namespace canopy::nccl_api
