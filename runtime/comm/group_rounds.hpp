// Rounds that every process of a joined communicator makes together through its group's bootstrap root
// (ProcessGroup, process_group.hpp), for the ways of running across processes (processes/, hosts/): host data
// exchanged (Communicator::exchange), a call agreed on (CANOPY_CHECK_CALLS=1), and a split into new communicators
// (Communicator::split). Each takes the communicator's lock (`mutex`: the bootstrap is one thread's at a time), and a
// communicator that failed, before or meanwhile (`failure`), ends the wait with its own reason.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "runtime/comm/call_failure.hpp"
#include "runtime/comm/call_path.hpp"
#include "runtime/comm/call_signature.hpp"
#include "runtime/comm/communicator_layout.hpp"
#include "runtime/comm/process_group.hpp"

namespace canopy {

// Every process's `mine`, in process order.
Status exchange_in_group(ProcessGroup& group, std::mutex& mutex, CallFailure& failure, std::string mine,
                         std::vector<std::string>* all);

// Every process made the same call (`mine`), through the bootstrap root, else the error shows process 0's and the
// first other's, and their ranks, in every process. Within a call: the caller holds the lock.
Status agree_on_call(ProcessGroup& group, CallFailure& failure, const CallSignature& mine);

// The processes trade (color, key), each new group's first process makes the group's UniqueId and the ids are traded
// the same way, then every process with a color joins its group through `join` on its own GPU (the parent's topology
// and the group's rank names when the parent was given a topology; `given` may set others), keeping its ranks per
// process (`own_ranks`). *out stays null for a process of no color.
Status split_group(ProcessGroup& group, std::mutex& mutex, CallFailure& failure, const CommunicatorLayout& layout,
                   int own_ranks, int color, int key, const CommunicatorOptions& given, const JoinPath& join,
                   std::unique_ptr<CallPath>* out);

}  // namespace canopy
