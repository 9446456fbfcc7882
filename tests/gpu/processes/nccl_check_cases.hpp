// The collectives canopy_nccl_check issues through the NCCL API and what each must produce: inputs that differ by
// rank, by "set" (fresh data for every replay or call) and by element, small integers so that every sum over four
// ranks is exact in float; expected outputs computed here on the host. Broadcast's root is rank 1 % n, reduce's the
// last rank; "allreduce in place" passes one buffer as both (as PyTorch does).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <vector>

namespace canopy::nccl_check {

enum class Case { allreduce, allreduce_in_place, broadcast, reduce, allgather, reducescatter };
inline constexpr Case kCases[] = {Case::allreduce, Case::allreduce_in_place, Case::broadcast,
                                  Case::reduce,    Case::allgather,          Case::reducescatter};

const char* case_name(Case c);
std::size_t send_elements(Case c, std::size_t count, int nranks);
std::size_t recv_elements(Case c, std::size_t count, int nranks);
bool in_place(Case c);
bool recv_checked(Case c, int rank, int nranks);  // reduce's non-root receive buffer is not written
float input(int rank, int set, std::size_t j);
// This rank's send buffer for `set`, and what its receive buffer must hold after the call.
std::vector<float> inputs(Case c, std::size_t count, int rank, int nranks, int set);
std::vector<float> expected(Case c, std::size_t count, int rank, int nranks, int set);
// Issues the collective (float sum where it reduces) on `stream`.
ncclResult_t issue(Case c, const void* send, void* recv, std::size_t count, ncclComm_t comm, cudaStream_t stream);
// Compares `got` with `want` bit for bit (NaN poison never matches); counts the wrong elements and prints the first
// few with `what`.
std::size_t compare(const std::vector<float>& got, const std::vector<float>& want, const char* what, int rank);

}  // namespace canopy::nccl_check
