// canopy_nccl_check's collectives, inputs and expected outputs (nccl_check_cases.hpp).
#include "tests/gpu/processes/nccl_check_cases.hpp"

#include <fmt/format.h>

#include <cstring>

namespace canopy::nccl_check {

namespace {
int broadcast_root(int nranks) { return 1 % nranks; }
int reduce_root(int nranks) { return nranks - 1; }
float sum_over_ranks(int nranks, int set, std::size_t j) {
  float s = 0;
  for (int r = 0; r < nranks; ++r) s += input(r, set, j);
  return s;
}
}  // namespace

const char* case_name(Case c) {
  switch (c) {
    case Case::allreduce: return "allreduce";
    case Case::allreduce_in_place: return "allreduce in place";
    case Case::broadcast: return "broadcast";
    case Case::reduce: return "reduce";
    case Case::allgather: return "allgather";
    case Case::reducescatter: return "reducescatter";
  }
  return "?";
}

std::size_t send_elements(Case c, std::size_t count, int nranks) {
  return c == Case::reducescatter ? count * nranks : count;
}
std::size_t recv_elements(Case c, std::size_t count, int nranks) {
  return c == Case::allgather ? count * nranks : count;
}
bool in_place(Case c) { return c == Case::allreduce_in_place; }
bool recv_checked(Case c, int rank, int nranks) { return c != Case::reduce || rank == reduce_root(nranks); }

float input(int rank, int set, std::size_t j) {
  return static_cast<float>((static_cast<std::size_t>(rank) * 3 + static_cast<std::size_t>(set) * 5 + j) % 17 + 1);
}

std::vector<float> inputs(Case c, std::size_t count, int rank, int nranks, int set) {
  std::vector<float> v(send_elements(c, count, nranks));
  for (std::size_t j = 0; j < v.size(); ++j) v[j] = input(rank, set, j);
  return v;
}

std::vector<float> expected(Case c, std::size_t count, int rank, int nranks, int set) {
  std::vector<float> v(recv_elements(c, count, nranks));
  for (std::size_t j = 0; j < v.size(); ++j) switch (c) {
      case Case::allreduce:
      case Case::allreduce_in_place:
      case Case::reduce: v[j] = sum_over_ranks(nranks, set, j); break;
      case Case::broadcast: v[j] = input(broadcast_root(nranks), set, j); break;
      case Case::allgather: v[j] = input(static_cast<int>(j / count), set, j % count); break;
      case Case::reducescatter: v[j] = sum_over_ranks(nranks, set, rank * count + j); break;
    }
  return v;
}

ncclResult_t issue(Case c, const void* send, void* recv, std::size_t count, ncclComm_t comm, cudaStream_t stream) {
  int nranks = 0;
  ncclCommCount(comm, &nranks);
  switch (c) {
    case Case::allreduce:
    case Case::allreduce_in_place: return ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream);
    case Case::broadcast:
      return ncclBroadcast(send, recv, count, ncclFloat32, broadcast_root(nranks), comm, stream);
    case Case::reduce:
      return ncclReduce(send, recv, count, ncclFloat32, ncclSum, reduce_root(nranks), comm, stream);
    case Case::allgather: return ncclAllGather(send, recv, count, ncclFloat32, comm, stream);
    case Case::reducescatter: return ncclReduceScatter(send, recv, count, ncclFloat32, ncclSum, comm, stream);
  }
  return ncclInvalidArgument;
}

std::size_t compare(const std::vector<float>& got, const std::vector<float>& want, const char* what, int rank) {
  if (got.size() == want.size() && std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0) return 0;
  std::size_t wrong = 0;
  for (std::size_t j = 0; j < want.size(); ++j) {
    std::uint32_t a = 0, b = 0;
    std::memcpy(&a, &got[j], 4);
    std::memcpy(&b, &want[j], 4);
    if (a == b) continue;
    if (wrong++ < 3) fmt::print(stderr, "rank {}: {}: element {} is {}, expected {}\n", rank, what, j, got[j], want[j]);
  }
  return wrong;
}

}  // namespace canopy::nccl_check
