// Splits of joined handles: a rank each, the communicator's other ranks in other processes. Communicator::split is
// collective (it returns once every rank of the parent has called it), and NCCL lets one thread split several such
// handles inside a group (ncclGroupStart; ncclCommSplit of each; ncclGroupEnd: nccl-tests -g N under mpirun, one rank
// of each communicator per handle). Split one after another from that thread, the first would wait for the next,
// which the thread has yet to issue. So a group's splits run at its ncclGroupEnd at once, a thread each
// (split_joined), and the real NCCL's splits beside them together inside one real group (split_real_comms_together).
// Outside a group a split runs alone, on the caller's thread. The splitter is a parameter so the CPU tests run the
// same code with splits of their own (a simulated collective: each returns once all have entered).
#pragma once

#include <nccl.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.hpp"
#include "nccl/init/local_split.hpp"

namespace canopy {
class Communicator;
}

namespace canopy::nccl_api {

// One handle's split: *child null for a rank that joins no group (color NCCL_SPLIT_NOCOLOR) or on error.
using JoinedSplitter =
    std::function<Status(ncclComm* parent, int color, int key, std::unique_ptr<Communicator>* child)>;
// The library's: Communicator::split of the parent's communicator.
Status split_communicator(ncclComm* parent, int color, int key, std::unique_ptr<Communicator>* child);

// A joined split child's key in joined_teardown(): the parent's, marked with which of the parent handle's splits made
// it and its color, so the children of one split here (the same parent id, ordinal and color) share one, as handles
// of one id do, and end without waiting for each other when one thread destroys them in turn.
std::array<unsigned char, 128> split_child_key(const std::array<unsigned char, 128>& parent, std::uint64_t ordinal,
                                               int color);

// Splits every request's parent at once (the first on this thread, the others a thread each), then writes each
// request's child handle (null: no color) to its out pointer. An error: the first one, prefixed by `who`, and no
// child handle written for that request.
ncclResult_t split_joined(const std::vector<std::pair<SplitRequest, ncclComm_t*>>& splits, const std::string& who,
                          const JoinedSplitter& splitter = split_communicator);

}  // namespace canopy::nccl_api
