// canopy_nccl_check --mode premul (the default): AllReduce, Reduce and ReduceScatter of float with PreMulSum operators
// (a host scalar and a device scalar, each rank its own), every element checked against sum_r(scalar_r * x_r)
// computed here, and the send buffer left untouched. Prints "nccl rank R: N elements checked, W wrong".
#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "tests/gpu/processes/nccl_check.hpp"

namespace canopy::nccl_check {

namespace {

float input(int rank, std::size_t j) { return static_cast<float>(rank + 1) + static_cast<float>(j % 7); }
float scalar_of(int rank, int which) { return which == 0 ? 0.5f * static_cast<float>(rank + 1) : 2.0f - rank * 0.25f; }

}  // namespace

int check_premul(const CheckRank& c) {
  const std::size_t count = 1000003;  // odd: the scale kernel's tail
  std::vector<float> host(count * c.nranks);
  for (std::size_t j = 0; j < host.size(); ++j) host[j] = input(c.rank, j);
  float *send = nullptr, *recv = nullptr, *device_scalar = nullptr;
  cudaMalloc(&send, host.size() * sizeof(float));
  cudaMalloc(&recv, host.size() * sizeof(float));
  cudaMalloc(&device_scalar, sizeof(float));
  const float device_value = scalar_of(c.rank, 1);
  cudaMemcpy(device_scalar, &device_value, sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(send, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  float host_value = scalar_of(c.rank, 0);
  ncclRedOp_t ops[2];
  if (!ok(ncclRedOpCreatePreMulSum(&ops[0], &host_value, ncclFloat32, ncclScalarHostImmediate, c.comm), "create", c.comm) ||
      !ok(ncclRedOpCreatePreMulSum(&ops[1], device_scalar, ncclFloat32, ncclScalarDevice, c.comm), "create", c.comm))
    return 1;
  host_value = 99.0f;  // an immediate scalar was copied at creation

  std::size_t checked = 0, wrong = 0;
  std::vector<float> out(host.size());
  auto expect = [&](std::size_t j, std::size_t element, int which) {  // element: index into the rank's input
    double e = 0;
    for (int r = 0; r < c.nranks; ++r) e += static_cast<double>(scalar_of(r, which)) * input(r, element);
    ++checked;
    if (std::fabs(out[j] - e) > 1e-4 * std::fabs(e) + 1e-5) {
      if (wrong++ < 5) fmt::print(stderr, "rank {}: element {} is {}, expected {}\n", c.rank, j, out[j], e);
    }
  };
  for (int which = 0; which < 2; ++which) {
    if (!ok(ncclAllReduce(send, recv, count, ncclFloat32, ops[which], c.comm, c.stream), "ncclAllReduce", c.comm)) return 1;
    cudaMemcpyAsync(out.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost, c.stream);
    cudaStreamSynchronize(c.stream);
    for (std::size_t j = 0; j < count; ++j) expect(j, j, which);
    if (!ok(ncclReduceScatter(send, recv, count, ncclFloat32, ops[which], c.comm, c.stream), "ncclReduceScatter", c.comm))
      return 1;
    cudaMemcpyAsync(out.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost, c.stream);
    cudaStreamSynchronize(c.stream);
    for (std::size_t j = 0; j < count; ++j) expect(j, static_cast<std::size_t>(c.rank) * count + j, which);
    if (!ok(ncclReduce(send, recv, count, ncclFloat32, ops[which], 0, c.comm, c.stream), "ncclReduce", c.comm)) return 1;
    if (c.rank == 0) {
      cudaMemcpyAsync(out.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost, c.stream);
      cudaStreamSynchronize(c.stream);
      for (std::size_t j = 0; j < count; ++j) expect(j, j, which);
    }
  }
  // The send buffer is left as it was (the scaling went to scratch).
  cudaMemcpy(out.data(), send, host.size() * sizeof(float), cudaMemcpyDeviceToHost);
  for (std::size_t j = 0; j < host.size(); ++j) wrong += out[j] != host[j] ? 1 : 0;
  cudaStreamSynchronize(c.stream);
  ok(ncclRedOpDestroy(ops[0], c.comm), "ncclRedOpDestroy", c.comm);
  ok(ncclRedOpDestroy(ops[1], c.comm), "ncclRedOpDestroy", c.comm);
  cudaFree(send);
  cudaFree(recv);
  cudaFree(device_scalar);
  fmt::print("nccl rank {}: {} elements checked, {} wrong\n", c.rank, checked, wrong);
  return wrong == 0 ? 0 : 1;
}

}  // namespace canopy::nccl_check
