// canopy_nccl_check's parts (tests/gpu/processes/nccl_api_check_main.cpp runs one per --mode): one process of a check
// of the NCCL API through its C entry points, every process on GPU 0. Each mode returns the process's exit code (0:
// all right) after printing what it checked; the collectives' inputs and expected outputs are in nccl_check_cases.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <string>
#include <vector>

namespace canopy::nccl_check {

struct CheckArgs {
  std::string mode = "premul";     // premul, graphs, reuse, bad-argument, teardown, borrowed, watchdog-abort
  std::string teardown = "destroy";  // destroy, finalize (then destroy), abort, exit (none: the process just ends)
  std::string id_file;             // rank 0 makes the id (ncclGetUniqueId: the root in its process) and writes it here
  std::string capture = "global";  // graphs: cudaStreamCaptureMode global (PyTorch's default), thread or relaxed
  std::vector<std::size_t> counts;  // per mode defaults when empty
  int replays = 100;               // graphs
  int iterations = 60;             // reuse
  int bad_rank = 1;                // bad-argument: the rank that passes it
  int bad_call = 3;                // bad-argument: at which call
  std::string bad = "null";        // bad-argument: null (recvbuff NULL) or oversized (count beyond its buffer)
  std::string bad_kind = "allreduce";  // bad-argument: the refused call, allreduce or alltoall (ncclAlltoAll)
  bool spread = false;             // --spread 1: rank r on GPU r mod the visible GPUs (else every rank on GPU 0)
  int ranks_here = 0;              // --ranks-here K: K ranks in this process, initialised in one group (0: not given)
  bool split_alone = false;        // --split-alone 1 (with --ranks-here 1): ncclCommSplit outside a group
  std::string expect = "real";     // borrowed: real (the real NCCL beside takes them), canopy, or refused (none)
  bool hostid = false;             // --hostid 1: this process sets its own NCCL_HOSTID before the init
  int init_all = 0;                // --init-all K: K ranks in this process on GPU 0 (ncclCommInitAll), point-to-point
};

struct CheckRank {
  int rank = 0;
  int nranks = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  const CheckArgs* args = nullptr;
};

// Prints WHAT's failure (the code and ncclGetLastError) and returns false unless r is ncclSuccess.
bool ok(ncclResult_t r, const char* what, ncclComm_t comm);
// Likewise for a CUDA call.
bool cuda_ok(cudaError_t e, const char* what);
// Milliseconds since the epoch (system clock): the test compares them across processes and with its own.
long long now_ms();

int check_premul(const CheckRank& c);
int check_graphs(const CheckRank& c);
int check_reuse(const CheckRank& c);
int check_bad_argument(const CheckRank& c);
int check_teardown_work(const CheckRank& c);  // a few checked calls before --teardown
int check_borrowed(const CheckRank& c);       // nccl_check_borrowed.cpp
int check_watchdog_abort(const CheckRank& c);  // nccl_check_watchdog_abort.cpp
// --ranks-here K (K >= 1): the whole run of process `process` of `processes` (nccl_check_ranks_here.cpp).
int check_ranks_here(int process, int processes, const CheckArgs& a, const ncclUniqueId& id);
// --init-all K (K >= 1): the whole run of this process (nccl_check_point_to_point.cpp).
int check_point_to_point(const CheckArgs& a);

}  // namespace canopy::nccl_check
