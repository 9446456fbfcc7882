// describe_gpus, enable_peer_access, CurrentDevice (see gpu_devices.hpp).
#include "runtime/cuda/gpu_devices.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "core/error.hpp"
#include "runtime/cuda/cuda_check.hpp"

namespace canopy {

int visible_gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::vector<GpuDevice> describe_gpus(std::vector<int> ordinals) {
  int n = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess || n == 0) {
    (void)cudaGetLastError();
    // No driver at all (libcuda.so.1 missing) reads as cudaErrorInsufficientDriver: say what it means.
    std::string why = e == cudaSuccess ? "cudaGetDeviceCount found none" : cudaGetErrorString(e);
    if (e == cudaErrorInsufficientDriver) why = fmt::format("no NVIDIA driver was found: CUDA says \"{}\"", why);
    throw Error(fmt::format("no CUDA device is visible ({}): run on a machine with NVIDIA GPUs and a driver, and "
                            "check CUDA_VISIBLE_DEVICES",
                            why));
  }
  if (ordinals.empty())
    for (int d = 0; d < n; ++d) ordinals.push_back(d);
  std::vector<GpuDevice> out;
  for (int d : ordinals) {
    if (d < 0 || d >= n)
      throw Error(fmt::format("device {} does not exist: {} GPU{} visible (0..{})", d, n, n == 1 ? " is" : "s are",
                              n - 1));
    for (const GpuDevice& g : out)
      if (g.ordinal == d) throw Error(fmt::format("device {} is listed twice: give each GPU once", d));
    cudaDeviceProp p{};
    CANOPY_CUDA_CHECK(cudaGetDeviceProperties(&p, d));
    GpuDevice g;
    g.ordinal = d;
    g.name = p.name;
    g.arch = fmt::format("sm_{}{}", p.major, p.minor);
    g.limits.sms = p.multiProcessorCount;
    g.limits.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    g.limits.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
    g.limits.registers_per_sm = p.regsPerMultiprocessor;
    g.memory_bytes = static_cast<std::int64_t>(p.totalGlobalMem);
    for (unsigned char b : p.uuid.bytes) g.uuid += fmt::format("{:02x}", b);
    out.push_back(g);
  }
  return out;
}

std::vector<std::vector<bool>> enable_peer_access(const std::vector<GpuDevice>& gpus) {
  const int n = static_cast<int>(gpus.size());
  std::vector<std::vector<bool>> peer(n, std::vector<bool>(n, false));
  CurrentDevice keep;
  for (int a = 0; a < n; ++a) {
    peer[a][a] = true;
    CANOPY_CUDA_CHECK(cudaSetDevice(gpus[a].ordinal));
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      int can = 0;
      CANOPY_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, gpus[a].ordinal, gpus[b].ordinal));
      if (!can) continue;
      const cudaError_t e = cudaDeviceEnablePeerAccess(gpus[b].ordinal, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
        throw_cuda_error(e, "cudaDeviceEnablePeerAccess", __FILE__, __LINE__);
      (void)cudaGetLastError();  // clear "already enabled"
      peer[a][b] = true;
    }
  }
  return peer;
}

CurrentDevice::CurrentDevice() {
  if (cudaGetDevice(&saved_) != cudaSuccess) {
    (void)cudaGetLastError();
    saved_ = -1;
  }
}

CurrentDevice::~CurrentDevice() {
  // Asking is cheaper than switching, and most scopes end on the device they began with.
  int now = -1;
  if (saved_ >= 0 && (cudaGetDevice(&now) != cudaSuccess || now != saved_)) (void)cudaSetDevice(saved_);
}

}  // namespace canopy
