// PreMulSum's scaled inputs (premul_run.hpp).
#include "nccl/premul/premul_run.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace canopy::nccl_api {

namespace {

// Elements of a rank's input: reduce-scatter sends count per rank to every rank.
std::uint64_t input_elements(const RankCall& c, int nranks) {
  return c.collective == Collective::reducescatter ? c.count * static_cast<std::uint64_t>(nranks) : c.count;
}

}  // namespace

Status PreMulScratch::scale(Communicator& comm, int first_rank, const std::vector<std::optional<RankCall>>& parts,
                            std::vector<const void*>& send) {
  int keep = 0;
  (void)cudaGetDevice(&keep);
  Status result;
  for (std::size_t k = 0; k < parts.size() && result.ok(); ++k) {
    const RankCall& c = *parts[k];
    const int rank = first_rank + static_cast<int>(k);
    const int device = comm.device_of_rank(rank);
    const std::uint64_t elements = input_elements(c, comm.ranks());
    void* scratch = nullptr;
    cudaError_t e = cudaSetDevice(device);
    const std::uint64_t bytes = elements * static_cast<std::uint64_t>(size_of(c.dtype));
    if (e == cudaSuccess) e = cudaMallocAsync(&scratch, bytes, c.stream);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      result = Status(StatusCode::cuda_error, fmt::format("{} with a PreMulSum operator: scratch for rank {}'s scaled "
                                                          "input ({} elements): {}",
                                                          c.function, rank, elements, cudaGetErrorString(e)));
      break;
    }
    buffers_.push_back(scratch);
    devices_.push_back(device);
    streams_.push_back(c.stream);
    result = comm.scale(rank, scratch, c.send, elements, c.dtype, c.scalar.device, &c.scalar.host, c.stream);
    send[k] = scratch;
  }
  (void)cudaSetDevice(keep);
  return result;
}

void PreMulScratch::release() {
  if (buffers_.empty()) return;  // every call but a PreMulSum's: no device switches
  int keep = 0;
  (void)cudaGetDevice(&keep);
  for (std::size_t k = 0; k < buffers_.size(); ++k) {
    if (cudaSetDevice(devices_[k]) == cudaSuccess && cudaFreeAsync(buffers_[k], streams_[k]) != cudaSuccess)
      (void)cudaGetLastError();
  }
  buffers_.clear();
  (void)cudaSetDevice(keep);
}

PreMulScratch::~PreMulScratch() { release(); }

}  // namespace canopy::nccl_api
