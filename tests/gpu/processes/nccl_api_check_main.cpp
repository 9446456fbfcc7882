// One process of a multi-process check of the NCCL API (libcanopy_nccl's entry points, linked from its objects):
// started by `canopy run -n N` (CANOPY_RANK, CANOPY_NRANKS, CANOPY_UNIQUE_ID), every process on the same GPU. It
// initialises with a non-blocking config (ncclInProgress, then ncclCommGetAsyncError until ncclSuccess), then runs
// AllReduce, Reduce and ReduceScatter of float with PreMulSum operators (a host scalar and a device scalar, each
// rank its own) and checks every element against sum_r(scalar_r * x_r) computed here. Prints
// "nccl rank R: N elements checked, W wrong" and exits 0 only when all is right.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "runtime/transport/bootstrap/unique_id.hpp"

namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

float input(int rank, std::size_t j) { return static_cast<float>(rank + 1) + static_cast<float>(j % 7); }
float scalar_of(int rank, int which) { return which == 0 ? 0.5f * static_cast<float>(rank + 1) : 2.0f - rank * 0.25f; }

bool ok(ncclResult_t r, const char* what, ncclComm_t comm) {
  if (r == ncclSuccess) return true;
  fmt::print(stderr, "{} failed: {} ({})\n", what, ncclGetErrorString(r), ncclGetLastError(comm));
  return false;
}

}  // namespace

int main() {
  const int rank = env_int("CANOPY_RANK"), nranks = env_int("CANOPY_NRANKS");
  canopy::UniqueId cid;
  const char* text = std::getenv("CANOPY_UNIQUE_ID");
  if (rank < 0 || nranks < 1 || !text || !canopy::parse_unique_id(text, &cid).ok()) {
    fmt::print(stderr, "run me under `canopy run -n N`\n");
    return 2;
  }
  ncclUniqueId id;
  std::memcpy(id.internal, cid.bytes.data(), sizeof id.internal);
  if (cudaSetDevice(0) != cudaSuccess) return 2;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t init = ncclCommInitRankConfig(&comm, nranks, id, rank, &config);
  if (init != ncclInProgress && !ok(init, "ncclCommInitRankConfig", comm)) return 1;
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    if (!ok(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError", comm)) return 1;
    std::this_thread::yield();
  }
  if (!ok(state, "the non-blocking init", comm)) return 1;

  const std::size_t count = 1000003;  // odd: the scale kernel's tail
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  std::vector<float> host(count * nranks);
  for (std::size_t j = 0; j < host.size(); ++j) host[j] = input(rank, j);
  float *send = nullptr, *recv = nullptr, *device_scalar = nullptr;
  cudaMalloc(&send, host.size() * sizeof(float));
  cudaMalloc(&recv, host.size() * sizeof(float));
  cudaMalloc(&device_scalar, sizeof(float));
  const float device_value = scalar_of(rank, 1);
  cudaMemcpy(device_scalar, &device_value, sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(send, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  float host_value = scalar_of(rank, 0);
  ncclRedOp_t ops[2];
  if (!ok(ncclRedOpCreatePreMulSum(&ops[0], &host_value, ncclFloat32, ncclScalarHostImmediate, comm), "create", comm) ||
      !ok(ncclRedOpCreatePreMulSum(&ops[1], device_scalar, ncclFloat32, ncclScalarDevice, comm), "create", comm))
    return 1;
  host_value = 99.0f;  // an immediate scalar was copied at creation

  std::size_t checked = 0, wrong = 0;
  std::vector<float> out(host.size());
  auto expect = [&](std::size_t j, std::size_t element, int which) {  // element: index into the rank's input
    double e = 0;
    for (int r = 0; r < nranks; ++r) e += static_cast<double>(scalar_of(r, which)) * input(r, element);
    ++checked;
    if (std::fabs(out[j] - e) > 1e-4 * std::fabs(e) + 1e-5) {
      if (wrong++ < 5) fmt::print(stderr, "rank {}: element {} is {}, expected {}\n", rank, j, out[j], e);
    }
  };
  for (int which = 0; which < 2; ++which) {
    if (!ok(ncclAllReduce(send, recv, count, ncclFloat32, ops[which], comm, stream), "ncclAllReduce", comm)) return 1;
    cudaMemcpyAsync(out.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    for (std::size_t j = 0; j < count; ++j) expect(j, j, which);
    if (!ok(ncclReduceScatter(send, recv, count, ncclFloat32, ops[which], comm, stream), "ncclReduceScatter", comm))
      return 1;
    cudaMemcpyAsync(out.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    for (std::size_t j = 0; j < count; ++j) expect(j, rank * count + j, which);
    if (!ok(ncclReduce(send, recv, count, ncclFloat32, ops[which], 0, comm, stream), "ncclReduce", comm)) return 1;
    if (rank == 0) {
      cudaMemcpyAsync(out.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost, stream);
      cudaStreamSynchronize(stream);
      for (std::size_t j = 0; j < count; ++j) expect(j, j, which);
    }
  }
  // The send buffer is left as it was (the scaling went to scratch).
  cudaMemcpy(out.data(), send, host.size() * sizeof(float), cudaMemcpyDeviceToHost);
  for (std::size_t j = 0; j < host.size(); ++j) wrong += out[j] != host[j] ? 1 : 0;
  cudaStreamSynchronize(stream);
  ok(ncclRedOpDestroy(ops[0], comm), "ncclRedOpDestroy", comm);
  ok(ncclRedOpDestroy(ops[1], comm), "ncclRedOpDestroy", comm);
  ok(ncclCommDestroy(comm), "ncclCommDestroy", nullptr);
  fmt::print("nccl rank {}: {} elements checked, {} wrong\n", rank, checked, wrong);
  return wrong == 0 ? 0 : 1;
}
