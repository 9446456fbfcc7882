// Communicators a process never destroys (NCCL programs may exit without ncclCommDestroy or ncclCommAbort, and NCCL
// allows it): at exit, each stops watching the other processes (Communicator::leave_at_exit) before the CUDA runtime
// is torn down, so no thread of a leaked communicator runs into freed memory (its abort word) or reports the other
// processes' own exits as losses while this one goes. SharedComm tracks itself here from construction to destruction;
// the exit handler is registered (std::atexit) with the first, after the CUDA runtime's own, so it runs before it.
#pragma once

namespace canopy::nccl_api {

class SharedComm;

void track_at_exit(SharedComm* comm);
void untrack_at_exit(SharedComm* comm);
int tracked_at_exit();  // how many live communicators the exit handler would stop (tests)

}  // namespace canopy::nccl_api
