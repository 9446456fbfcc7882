// One rank's refused collective must not hang the others. When a served collective fails with ncclInvalidArgument in
// this process alone (a NULL buffer, a bad type or root, a count larger than the buffer: its own arguments), on a
// communicator whose other ranks live in other processes, those ranks still make the call and their kernels would
// wait for this one's forever (NCCL hangs there). So the communicator is failed (Communicator::fail) with the error:
// every process's pending and later calls fail within ~100 ms (ncclCommGetAsyncError: ncclRemoteError), naming this
// rank and its error, as NCCL's asynchronous errors would. Errors every rank meets alike (a refused forward,
// ncclInvalidUsage) and communicators held whole by this process are left alone.
#pragma once

#include <nccl.h>

#include <string>

struct ncclComm;

namespace canopy::nccl_api {

// Whether a failure `result` of a collective on `comm` ends the communicator (the rule above).
bool ends_communicator(const ncclComm* comm, ncclResult_t result);
// Fails `comm` when ends_communicator says so; `function` and `error` (the refused call's message) say why.
void fail_communicator_on_local_error(ncclComm* comm, ncclResult_t result, const char* function,
                                      const std::string& error);
// The message the other processes see: "rank R of N refused its FUNCTION (ERROR), which ...".
std::string local_error_text(int rank, int nranks, const char* function, const std::string& error);

}  // namespace canopy::nccl_api
