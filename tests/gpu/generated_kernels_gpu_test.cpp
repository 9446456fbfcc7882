// Generated kernels on real GPUs (label gpu; SKIPPED without one): plan -> generate -> NVRTC -> load with the CUDA
// runtime -> launch on every device -> compare with the collective's definition. Ranks beyond the GPU count run
// as virtual ranks (several per GPU, one launch each), so the 8-rank dgx1-v100 plans run on one H100. A minimal
// host harness until the runtime's Communicator lands; it launches cooperatively, so a grid that cannot be
// co-resident fails loudly instead of hanging.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <ostream>

#include "codegen/generate.hpp"
#include "codegen/template_bundle.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"
#include "runtime/jit/nvrtc_compiler.hpp"
#include "runtime/launch/device_args_image.hpp"

namespace canopy {
namespace {

#define CUDA_OK(call)                                                                              \
  do {                                                                                             \
    const cudaError_t err_ = (call);                                                               \
    ASSERT_EQ(err_, cudaSuccess) << #call << ": " << cudaGetErrorString(err_) << " at " << __LINE__; \
  } while (0)

int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

std::string gpu_arch(int device) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return "sm_90";
  return "sm_" + std::to_string(p.major * 10 + p.minor);
}

struct GpuCase {
  const char* topology;
  Collective collective;
  int threads = 256;
  int blocks_per_rank = 2;
};
void PrintTo(const GpuCase& c, std::ostream* os) { *os << c.topology << " " << to_string(c.collective); }


float launch_input(int launch, int rank, std::uint64_t j) { return static_cast<float>((rank * 7 + j * 13 + launch * 5) % 17) - 8; }

class GeneratedKernelsOnGpu : public ::testing::TestWithParam<GpuCase> {};

TEST_P(GeneratedKernelsOnGpu, DeliverTheCollective) {
  const int gpus = gpu_count();
  if (gpus == 0) GTEST_SKIP() << "no CUDA device (cudaGetDeviceCount found none): run on a GPU machine";
  const GpuCase& c = GetParam();
  const Plan p = plan(load_topology(c.topology), c.collective);
  const int n = static_cast<int>(p.ranks.size());
  const int devices = std::min(gpus, n);
  CodegenOptions o;
  o.threads_per_block = c.threads;
  o.blocks_per_rank = c.blocks_per_rank;
  o.chunk_bytes = 64 * 1024;
  o.device_of_rank = block_placement(n, devices);
  const KernelSource k = generate(p, o);
  CompileOptions co;
  co.arch = gpu_arch(0);
  const CompiledModule m = compile_cuda(k.file, template_headers(), co);

  std::vector<cudaLibrary_t> libs(devices);
  std::vector<cudaKernel_t> kernels(devices);
  std::vector<cudaStream_t> streams(devices);
  for (int d = 0; d < devices; ++d) {
    CUDA_OK(cudaSetDevice(d));
    for (int q = 0; q < devices; ++q)
      if (q != d) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(q, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) GTEST_SKIP() << "no P2P between GPUs " << d << " and " << q;
        (void)cudaGetLastError();
      }
    CUDA_OK(cudaLibraryLoadData(&libs[d], m.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    CUDA_OK(cudaLibraryGetKernel(&kernels[d], libs[d], k.entry.c_str()));
    CUDA_OK(cudaStreamCreate(&streams[d]));
  }
  const std::uint64_t max_count = 300007;
  const std::uint64_t send_elems = c.collective == Collective::reducescatter ? max_count * n : max_count;
  const std::uint64_t recv_elems = c.collective == Collective::allgather ? max_count * n : max_count;
  std::vector<float*> send(n), recv(n);
  std::vector<void*> scratch(n), flags(n);
  for (int r = 0; r < n; ++r) {
    CUDA_OK(cudaSetDevice(o.device_of_rank[r]));
    CUDA_OK(cudaMalloc(&send[r], send_elems * sizeof(float)));
    CUDA_OK(cudaMalloc(&recv[r], recv_elems * sizeof(float)));
    CUDA_OK(cudaMalloc(&scratch[r], std::max<std::int64_t>(16, k.resources[r].scratch_bytes)));
    // The counters, then a line for the launch counter (the first rank of each GPU's is that GPU's).
    const std::size_t flag_bytes = (std::max(1, k.resources[r].flag_count) + 1) * kFlagStride * 8;
    CUDA_OK(cudaMalloc(&flags[r], flag_bytes));
    CUDA_OK(cudaMemset(flags[r], 0, flag_bytes));
  }
  std::vector<unsigned long long*> launches(n, nullptr);  // per device index
  for (int d = 0; d < devices; ++d) {
    const int first =
        static_cast<int>(std::find(o.device_of_rank.begin(), o.device_of_rank.end(), d) - o.device_of_rank.begin());
    launches[d] =
        static_cast<unsigned long long*>(flags[first]) + std::max(1, k.resources[first].flag_count) * kFlagStride;
  }
  const int root = p.root ? static_cast<int>(std::find(p.ranks.begin(), p.ranks.end(), *p.root) - p.ranks.begin()) : 0;
  int launch = 0;
  for (std::uint64_t count : {max_count, std::uint64_t{7}, std::uint64_t{1}, std::uint64_t{65536 * 3 + 5}}) {
    ++launch;
    const std::uint64_t in_elems = c.collective == Collective::reducescatter ? count * n : count;
    const std::uint64_t out_elems = c.collective == Collective::allgather ? count * n : count;
    std::vector<std::vector<float>> in(n, std::vector<float>(in_elems));
    for (int r = 0; r < n; ++r) {
      for (std::uint64_t j = 0; j < in_elems; ++j) in[r][j] = launch_input(launch, r, j);
      CUDA_OK(cudaMemcpy(send[r], in[r].data(), in_elems * sizeof(float), cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemset(recv[r], 0xff, recv_elems * sizeof(float)));  // NaN poison
    }
    // DeviceArgs<n>: the abort word stays null. Odd launches give their epoch; even ones pass 0, so the kernels read
    // it from their launch counters (as after a CUDA graph capture), which the launch before left there.
    DeviceArgsImage args;
    args.reset(n);
    args.set_count(count);
    args.set_epoch(launch % 2 == 1 ? launch : 0);
    for (int d = 0; d < n; ++d) args.set_launch_counter(d, launches[d]);
    for (int r = 0; r < n; ++r)
      args.set_rank(r, RankPointers{send[r], recv[r], scratch[r], static_cast<unsigned long long*>(flags[r])});
    for (int d = 0; d < devices; ++d) {
      CUDA_OK(cudaSetDevice(d));
      int device = d;
      void* params[] = {args.data(), &device};
      CUDA_OK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernels[d]), dim3(k.launches[d].blocks),
                                          dim3(k.launches[d].threads), params, 0, streams[d]));
    }
    for (int d = 0; d < devices; ++d) {
      CUDA_OK(cudaSetDevice(d));
      CUDA_OK(cudaStreamSynchronize(streams[d]));
    }
    int wrong = 0;
    for (int r = 0; r < n; ++r) {
      if (c.collective == Collective::reduce && r != root) continue;
      std::vector<float> out(out_elems);
      CUDA_OK(cudaMemcpy(out.data(), recv[r], out_elems * sizeof(float), cudaMemcpyDeviceToHost));
      for (std::uint64_t j = 0; j < out_elems; ++j) {
        float want = 0;
        switch (c.collective) {
          case Collective::broadcast: want = in[root][j]; break;
          case Collective::allgather: want = in[j / count][j % count]; break;
          case Collective::reducescatter:
            for (int q = 0; q < n; ++q) want += in[q][r * count + j];
            break;
          default:
            for (int q = 0; q < n; ++q) want += in[q][j];
        }
        if (out[j] != want && wrong++ < 5)
          ADD_FAILURE() << c.topology << " " << to_string(c.collective) << " count " << count << " rank " << r
                        << " element " << j << ": " << out[j] << ", expected " << want;
      }
    }
    EXPECT_EQ(wrong, 0) << "count " << count;
  }
  for (int r = 0; r < n; ++r) {
    cudaFree(send[r]), cudaFree(recv[r]), cudaFree(scratch[r]), cudaFree(flags[r]);
  }
  for (int d = 0; d < devices; ++d) {
    cudaSetDevice(d);
    cudaStreamDestroy(streams[d]);
    cudaLibraryUnload(libs[d]);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Plans, GeneratedKernelsOnGpu,
    ::testing::Values(GpuCase{"h200x2", Collective::allreduce, 512, 24}, GpuCase{"h200x2", Collective::broadcast, 512, 24},
                      GpuCase{"h200x2", Collective::reduce, 512, 24}, GpuCase{"h200x2", Collective::allgather, 512, 24},
                      GpuCase{"h200x2", Collective::reducescatter, 512, 24},
                      GpuCase{"dgx1-v100", Collective::allreduce, 128, 1}, GpuCase{"dgx1-v100", Collective::broadcast},
                      GpuCase{"dgx1-v100", Collective::reduce}, GpuCase{"dgx1-v100", Collective::allgather, 128, 1},
                      GpuCase{"dgx1-v100", Collective::reducescatter, 128, 1},
                      GpuCase{"hgx-h200", Collective::allreduce, 128, 1}),
    [](const auto& info) {
      std::string name = std::string(info.param.topology) + "_" + to_string(info.param.collective);
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace
}  // namespace canopy
