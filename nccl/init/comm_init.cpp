// Canopy communicators behind ncclCommInitRank* and ncclCommInitAll, and the real NCCL's beside them
// (comm_init.hpp).
#include "nccl/comm/comm_registry.hpp"
#include "nccl/init/comm_init.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "nccl/base/last_error.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "nccl/init/joined_teardown.hpp"
#include "nccl/real/real_comm.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy::nccl_api {

ncclResult_t read_environment(const char* function, ForwardSet* forward) {
  RealMode mode;
  if (Status s = real_mode_from_environment(&mode); !s.ok()) return to_result(s, function);
  if (Status s = forward_list_from_environment(forward); !s.ok()) return to_result(s, function);
  return ncclSuccess;
}

ncclComm* new_pending_comm(int nranks, int rank, const UniqueId& id, int device) {
  auto* comm = new ncclComm();
  track_handle(comm);
  comm->nranks = nranks;
  comm->rank = rank;
  comm->device = device;
  comm->id = id;
  return comm;
}

namespace {

// `comm`'s init failed with `r` for `why`: what ncclCommGetAsyncError and later calls report.
void mark_init_failed(ncclComm* comm, ncclResult_t r, std::string why) {
  comm->init_result = r;
  comm->init_error = std::move(why);
  comm->shared.reset();
  comm->state = CommState::failed;  // last: a non-blocking init's reader sees the rest once it sees this
}

}  // namespace

ncclResult_t join_comm(ncclComm* comm, const char* function) {
  CommunicatorOptions options;
  if (comm->device >= 0) options.devices = {comm->device};
  std::unique_ptr<Communicator> communicator;
  const Status s = Communicator::join(comm->id, comm->nranks, comm->rank, options, &communicator);
  if (!s.ok()) {
    mark_init_failed(comm, result_of(s.code()), s.message());
    return to_result(s, function);
  }
  comm->shared = std::make_shared<SharedComm>(std::move(communicator), comm->nranks, comm->rank, 1);
  comm->local = 0;
  if (const ncclResult_t r = attach_real_comm(comm, function); r != ncclSuccess) {
    mark_init_failed(comm, r, last_error());
    return r;
  }
  comm->joined = true;
  joined_teardown().joined(comm->id.bytes);
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

void hand_out_ranks(const std::shared_ptr<SharedComm>& shared, const std::vector<ncclComm*>& handles) {
  const int n = static_cast<int>(handles.size());
  for (int r = 0; r < n; ++r) {
    handles[r]->nranks = n;
    handles[r]->rank = r;
    handles[r]->local = r;
    handles[r]->device = shared->communicator().device_of_rank(r);
    handles[r]->shared = shared;
  }
}

CommunicatorOptions options_for_devices(const std::vector<int>& device_of_rank) {
  CommunicatorOptions options;
  const int n = static_cast<int>(device_of_rank.size());
  if (n > 1 && std::all_of(device_of_rank.begin(), device_of_rank.end(),
                           [&](int d) { return d == device_of_rank[0]; })) {
    options.devices = {device_of_rank[0]};  // virtual ranks, planned as the processes sharing a GPU are
    options.topology = shared_gpu_topology(n);
  } else {
    options.devices = device_of_rank;  // a GPU listed twice among others is refused by Communicator::create
  }
  return options;
}

ncclResult_t init_whole(const std::vector<ncclComm*>& comms, const char* function) {
  const int n = static_cast<int>(comms.size());
  const auto fail_all = [&](ncclResult_t r, const std::string& why) {
    retire_bootstrap_root(comms[0]->id);  // every rank is here: none will come to it
    for (ncclComm* c : comms) mark_init_failed(c, r, why);
    return fail(r, why);
  };
  std::vector<int> device_of_rank;
  for (ncclComm* c : comms) {
    if (c->device < 0)
      return fail_all(ncclInvalidUsage, fmt::format("{}: rank {} of {} has no CUDA device (cudaGetDevice failed at its "
                                                    "ncclCommInitRank): set one with cudaSetDevice first",
                                                    function, c->rank, n));
    device_of_rank.push_back(c->device);
  }
  const CommunicatorOptions options = options_for_devices(device_of_rank);
  const CurrentDevice keep;  // the caller's current GPU stays as it was, as NCCL leaves it
  std::unique_ptr<Communicator> communicator;
  if (const Status s = Communicator::create(options, &communicator); !s.ok()) {
    const ncclResult_t r = to_result(s, function);
    return fail_all(r, last_error());
  }
  auto shared = std::make_shared<SharedComm>(std::move(communicator), n, 0, n);
  shared->log().logger().info(
      LogSubsys::init, fmt::format("nccl: {}: all {} ranks of the unique id are in this process: one communicator over "
                                   "CUDA devices {} (as ncclCommInitAll), no bootstrap",
                                   function, n, fmt::join(device_of_rank, ",")));
  hand_out_ranks(shared, comms);
  if (const ncclResult_t r = attach_real_comms(comms, device_of_rank, function); r != ncclSuccess)
    return fail_all(r, last_error());
  retire_bootstrap_root(comms[0]->id);
  for (ncclComm* c : comms) c->state = CommState::ready;  // last: a non-blocking init's reader sees the rest first
  return ncclSuccess;
}

ncclResult_t init_all(ncclComm_t* comms, int ndev, const int* devlist) {
  if (!comms) return fail(ncclInvalidArgument, "ncclCommInitAll: comm is NULL: pass an array of ndev ncclComm_t");
  if (ndev < 1) return fail(ncclInvalidArgument, fmt::format("ncclCommInitAll: ndev is {}: it must be at least 1", ndev));
  ForwardSet forward;
  if (const ncclResult_t r = read_environment("ncclCommInitAll", &forward); r != ncclSuccess) return r;
  std::vector<int> device_of_rank;
  for (int r = 0; r < ndev; ++r) {
    const int device = devlist ? devlist[r] : r;
    if (device < 0)
      return fail(ncclInvalidArgument, fmt::format("ncclCommInitAll: devlist[{}] is {}: not a CUDA device", r, device));
    device_of_rank.push_back(device);
  }
  const CommunicatorOptions options = options_for_devices(device_of_rank);
  std::unique_ptr<Communicator> communicator;
  if (const Status s = Communicator::create(options, &communicator); !s.ok()) return to_result(s, "ncclCommInitAll");
  auto shared = std::make_shared<SharedComm>(std::move(communicator), ndev, 0, ndev);
  std::vector<ncclComm*> handles;
  for (int r = 0; r < ndev; ++r) {
    handles.push_back(new ncclComm());
    handles[r]->forward = forward;
  }
  hand_out_ranks(shared, handles);
  if (const ncclResult_t r = attach_real_comms(handles, device_of_rank, "ncclCommInitAll"); r != ncclSuccess) {
    for (ncclComm* h : handles) delete h;  // never handed out: comms is left as it was
    return r;
  }
  for (int r = 0; r < ndev; ++r) {
    handles[r]->state = CommState::ready;
    track_handle(handles[r]);  // here, not at `new`: a failed init deletes its handles
    comms[r] = handles[r];
  }
  return ncclSuccess;
}

}  // namespace canopy::nccl_api
