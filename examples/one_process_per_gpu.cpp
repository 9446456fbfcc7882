// One process per GPU with Canopy: start it with `canopy run -n N -- canopy-example-processes [TOPOLOGY]`. Each process
// joins one communicator (Communicator::join) with the id `canopy run` hands out, allreduces a buffer holding
// rank + 1 everywhere on its GPU, and checks that every element became 1 + 2 + ... + N. The topology (default
// hgx-h100, its first N GPUs the ranks) is what Canopy plans for; several processes may share one GPU. Its arguments
// are read before anything touches CUDA: --help and a wrong argument are answered on any machine.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "canopy.hpp"

namespace {

const char kUsage[] =
    "canopy-example-processes: one process of a job that allreduces across processes with Canopy: it joins one\n"
    "communicator with the id `canopy run` hands out (CANOPY_UNIQUE_ID, CANOPY_RANK, CANOPY_NRANKS), allreduces\n"
    "2^20 floats holding rank + 1 on its GPU (rank modulo the GPUs) and checks every element became 1 + ... + N.\n"
    "\n"
    "Usage: canopy run -n N -- canopy-example-processes [TOPOLOGY]\n"
    "\n"
    "  TOPOLOGY   what Canopy plans for, its first N GPUs the ranks: a shipped name (canopy topo list) or a .topo\n"
    "             file (default hgx-h100)\n"
    "\n"
    "Examples:\n"
    "  canopy run -n 2 -- canopy-example-processes            two ranks, on two GPUs or sharing one\n"
    "  canopy run -n 4 -- canopy-example-processes dgx1-v100\n"
    "Its source, examples/one_process_per_gpu.cpp, is the README's \"One process per GPU\" example.\n";

}  // namespace

int main(int argc, char** argv) {
  // Arguments: --help, then at most one TOPOLOGY; any other word is a mistake, named even beside --help.
  bool help = false;
  const char* topology = nullptr;
  for (int i = 1; i < argc; ++i) {
    const bool option = argv[i][0] == '-';
    if (option && (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0)) {
      help = true;
    } else if (option || topology) {
      std::fprintf(stderr, "canopy-example-processes: unexpected %s '%s'; it takes one TOPOLOGY at most (--help)\n",
                   option ? "option" : "argument", argv[i]);
      return 2;
    } else {
      topology = argv[i];
    }
  }
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!topology) topology = "hgx-h100";
  canopy::CommunicatorOptions options;
  try {
    options.topology = canopy::load_topology(topology);
  } catch (const canopy::Error& e) {
    std::fprintf(stderr, "canopy-example-processes: argument '%s': %s\n", topology, e.what());
    return 2;
  }
  const char* rank_text = std::getenv("CANOPY_RANK");
  const char* nranks_text = std::getenv("CANOPY_NRANKS");
  const char* id_text = std::getenv("CANOPY_UNIQUE_ID");
  if (!rank_text || !nranks_text || !id_text) {
    std::fprintf(stderr, "start me with: canopy run -n 2 -- %s [TOPOLOGY]\n", argv[0]);
    return 2;
  }
  const int rank = std::atoi(rank_text), nranks = std::atoi(nranks_text);
  canopy::UniqueId id;
  if (canopy::Status s = canopy::parse_unique_id(id_text, &id); !s.ok()) {
    std::fprintf(stderr, "CANOPY_UNIQUE_ID: %s\n", s.message().c_str());
    return 2;
  }
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::fprintf(stderr, "rank %d: no GPU visible\n", rank);
    return 1;
  }
  cudaSetDevice(rank % gpus);  // one GPU per process where there are enough; else processes share

  for (int r = 0; r < nranks; ++r) options.gpus.push_back(std::to_string(r));
  std::unique_ptr<canopy::Communicator> comm;
  if (canopy::Status s = canopy::Communicator::join(id, nranks, rank, options, &comm); !s.ok()) {
    std::fprintf(stderr, "rank %d: join: %s\n", rank, s.message().c_str());
    return 1;
  }

  const std::size_t count = 1 << 20;
  std::vector<float> host(count, static_cast<float>(rank + 1));
  void* buffer = nullptr;
  cudaStream_t stream = nullptr;
  cudaMalloc(&buffer, count * sizeof(float));
  cudaStreamCreate(&stream);
  cudaMemcpy(buffer, host.data(), count * sizeof(float), cudaMemcpyHostToDevice);
  const void* send[] = {buffer};
  void* recv[] = {buffer};  // in place
  const cudaStream_t streams[] = {stream};
  if (canopy::Status s =
          comm->allreduce(send, recv, count, canopy::DataType::f32, canopy::ReduceOp::sum, streams);
      !s.ok()) {
    std::fprintf(stderr, "rank %d: allreduce: %s\n", rank, s.message().c_str());
    return 1;
  }
  cudaStreamSynchronize(stream);
  cudaMemcpy(host.data(), buffer, count * sizeof(float), cudaMemcpyDeviceToHost);
  const float expected = nranks * (nranks + 1) / 2.0f;
  std::size_t wrong = 0;
  for (float v : host) wrong += v != expected;
  std::printf("rank %d of %d: allreduce of %zu floats, %zu wrong (expected %.0f everywhere)\n", rank, nranks, count,
              wrong, expected);
  comm.reset();
  cudaFree(buffer);
  cudaStreamDestroy(stream);
  return wrong ? 1 : 0;
}
