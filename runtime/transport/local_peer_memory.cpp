// LocalPeerMemory: cudaMalloc plus peer access, zeroing on its own streams.
#include "runtime/transport/local_peer_memory.hpp"

#include "runtime/cuda/cuda_check.hpp"

namespace canopy {

LocalPeerMemory::LocalPeerMemory(const std::vector<GpuDevice>& gpus, std::vector<int> device_of_rank)
    : device_of_rank_(std::move(device_of_rank)) {
  for (const GpuDevice& g : gpus) ordinals_.push_back(g.ordinal);
  peer_ = enable_peer_access(gpus);
  CurrentDevice keep;
  setup_stream_.assign(ordinals_.size(), nullptr);
  try {
    for (std::size_t d = 0; d < ordinals_.size(); ++d) {
      CANOPY_CUDA_CHECK(cudaSetDevice(ordinals_[d]));
      CANOPY_CUDA_CHECK(cudaStreamCreateWithFlags(&setup_stream_[d], cudaStreamNonBlocking));
    }
  } catch (...) {
    for (cudaStream_t s : setup_stream_)
      if (s) (void)cudaStreamDestroy(s);
    throw;
  }
}

LocalPeerMemory::~LocalPeerMemory() {
  for (cudaStream_t s : setup_stream_)
    if (s) (void)cudaStreamDestroy(s);
  (void)cudaGetLastError();
}

std::vector<void*> LocalPeerMemory::allocate_zeroed(const std::function<std::size_t(int)>& bytes) {
  CurrentDevice keep;
  std::vector<void*> out(device_of_rank_.size(), nullptr);
  try {
    for (std::size_t r = 0; r < out.size(); ++r) {
      const std::size_t b = bytes(static_cast<int>(r));
      const int d = device_of_rank_[r];
      CANOPY_CUDA_CHECK(cudaSetDevice(ordinals_[d]));
      CANOPY_CUDA_CHECK(cudaMalloc(&out[r], b));
      CANOPY_CUDA_CHECK(cudaMemsetAsync(out[r], 0, b, setup_stream_[d]));
    }
  } catch (...) {
    for (void* q : out)
      if (q) (void)cudaFree(q);
    throw;
  }
  return out;
}

void* LocalPeerMemory::allocate(int rank, std::size_t bytes) {
  CurrentDevice keep;
  void* p = nullptr;
  CANOPY_CUDA_CHECK(cudaSetDevice(ordinals_[device_of_rank_[rank]]));
  CANOPY_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}

void LocalPeerMemory::free(void* p) {
  if (p) (void)cudaFree(p);
  (void)cudaGetLastError();
}

void LocalPeerMemory::ready() {
  CurrentDevice keep;
  for (std::size_t d = 0; d < ordinals_.size(); ++d) {
    CANOPY_CUDA_CHECK(cudaSetDevice(ordinals_[d]));
    CANOPY_CUDA_CHECK(cudaStreamSynchronize(setup_stream_[d]));
  }
}

}  // namespace canopy
