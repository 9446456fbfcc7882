// A group's sends and receives served by Canopy (ncclSend, ncclRecv, ncclAlltoAll, ncclGather, ncclScatter on a
// communicator whose point-to-point the runtime serves): each call's ops are a part; at the outermost ncclGroupEnd, or
// at once for a call outside a group (a group of one), the parts of each communicator are posted as one batch to its
// SharedComm's PointToPointExchange (nccl/p2p/p2p_exchange.hpp), where they meet the batches of its ranks that other
// threads post, and are issued by Communicator::send_recv. Posting never waits; waiting does, for the other ranks of
// this process (up to CANOPY_BOOTSTRAP_TIMEOUT_S, then the batch is withdrawn and the call fails saying how to make
// it). Each part served says so once in CANOPY_LOG=info ("served by Canopy"), as the collectives do.
#pragma once

#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nccl/comm/comm_handle.hpp"
#include "nccl/p2p/p2p_exchange.hpp"

namespace canopy::nccl_api {

// One NCCL call's sends and receives on one handle.
struct PointToPointPart {
  ncclComm* comm = nullptr;
  std::vector<PointToPoint> ops;
  const char* function = "";              // "ncclAlltoAll"
  ncclDataType_t datatype = ncclFloat32;  // for the log line
  std::uint64_t bytes = 0;                // what the rank sends or receives in all: the log line's size class
  std::shared_ptr<void> scratch;          // an in-place AlltoAll's copy of its send buffer, freed on its stream
                                          // when the part goes (after its group was issued, or dropped)
};

// Numbers each handle's all-to-alls among `parts` (ncclAlltoAll's, whose ops alltoall_ops marked) 1, 2, ... in their
// order, as every rank of the communicator makes them (PointToPoint::alltoall_call): across processes each then runs
// as one collective (Communicator::send_recv). Done when a group is posted.
void number_alltoall_calls(std::span<PointToPointPart> parts);

// How long a call waits for the other ranks of its communicator in this process (a split, a send's receive): the
// bootstrap's timeout, CANOPY_BOOTSTRAP_TIMEOUT_S.
std::chrono::milliseconds ranks_wait();

// A group's parts, posted: one batch per communicator, in the order of their first parts.
class PostedPointToPoint {
 public:
  explicit PostedPointToPoint(std::vector<PointToPointPart> parts);
  // An error already known once posted (a batch's set was issued at once and refused, or a handle is no longer
  // ready): recorded (the message prefixed by `who`), every batch not yet issued withdrawn, and the code returned.
  // ncclSuccess otherwise.
  ncclResult_t failed_at_post(const std::string& who);
  // Waits for every batch (each up to ranks_wait()), logs each part served, and returns the first error (recorded,
  // prefixed by `who`); a failure of a communicator's own arguments fails a communicator spanning processes
  // (local_failure.hpp), as a collective's does.
  ncclResult_t wait(const std::string& who);

 private:
  struct Batch {
    std::shared_ptr<SharedComm> shared;  // held until the batch has left it, as a collective holds its own
    std::vector<std::size_t> parts;      // indexes into parts_
    PointToPointExchange::Ticket ticket = 0;
    bool posted = false;
  };
  ncclResult_t refused(const Batch& b, const Status& s, const std::string& who);

  std::vector<PointToPointPart> parts_;
  std::vector<Batch> batches_;
  ncclResult_t not_ready_ = ncclSuccess;  // a part whose handle was no longer ready: not posted
  std::string not_ready_text_;
};

// A call outside a group: its part posted and waited for, as a group of one.
ncclResult_t run_point_to_point_alone(PointToPointPart part);

}  // namespace canopy::nccl_api
