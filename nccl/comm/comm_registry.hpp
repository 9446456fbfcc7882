// Every Canopy handle this process made, for the status the library reports (ncclCanopyStatus, nccl/api/api_status):
// tracked from creation, or once ready where a failed init deletes its handles (a handle is otherwise never freed,
// only marked destroyed, so the list never dangles).
#pragma once

#include <vector>

struct ncclComm;

namespace canopy::nccl_api {

void track_handle(ncclComm* comm);  // init, ncclCommInitAll, splits
// The tracked handles still live (ready, not destroyed), in the order they were made.
std::vector<const ncclComm*> live_handles();

}  // namespace canopy::nccl_api
