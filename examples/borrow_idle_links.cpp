// Blink+ with Canopy: `canopy-example-relays [TOPOLOGY [RANKS [RELAYS]]]` makes a communicator whose ranks are a
// tenant's GPUs of TOPOLOGY and whose relays are idle GPUs that may forward for them (CommunicatorOptions::relays,
// docs/relays.md), broadcasts 2^24 floats from rank 0, checks every rank's copy, and says which relays the plan
// crosses and what their rings take. Every rank and relay runs on CUDA device 0 (virtual GPUs: the protocol is the
// real one, the bandwidth one GPU's). The plan is made before anything touches CUDA, so --help, a wrong argument and
// the plan's rates are answered on any machine.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "canopy.hpp"

namespace {

const char kUsage[] =
    "canopy-example-relays: a tenant's broadcast through other GPUs' idle links (Blink+) with Canopy: a communicator\n"
    "whose ranks are RANKS of TOPOLOGY and whose relays are RELAYS, 2^24 floats broadcast from rank 0 and checked on\n"
    "every rank, all on CUDA device 0 (virtual GPUs); it prints the plan's rate with and without the relays first.\n"
    "\n"
    "Usage: canopy-example-relays [TOPOLOGY [RANKS [RELAYS]]]\n"
    "\n"
    "  TOPOLOGY   a shipped name (canopy topo list) or a .topo file (default dgx1-p100)\n"
    "  RANKS      the tenant's GPUs, names or indices (default 0,1)\n"
    "  RELAYS     the idle GPUs that may forward (default 2,3,4,5)\n"
    "\n"
    "Examples:\n"
    "  canopy-example-relays                          Blink+'s own case: GPUs 0 and 1 of a DGX-1 (P100)\n"
    "  canopy-example-relays dgx1-v100 0,3 1,2        GPUs 0 and 3 of a DGX-1 (V100), 1 and 2 lent\n"
    "Its source, examples/borrow_idle_links.cpp, is the README's \"Borrow idle links (Blink+)\" example.\n";

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(list.substr(start, comma - start));
  out.push_back(list.substr(start));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // Arguments: --help, then at most three words; any other option or word is a mistake, named even beside --help.
  bool help = false;
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    const bool option = argv[i][0] == '-';
    if (option && (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0)) {
      help = true;
    } else if (option || words.size() == 3) {
      std::fprintf(stderr,
                   "canopy-example-relays: unexpected %s '%s'; it takes TOPOLOGY, RANKS and RELAYS at most (--help)\n",
                   option ? "option" : "argument", argv[i]);
      return 2;
    } else {
      words.push_back(argv[i]);
    }
  }
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const std::string topology_name = words.size() > 0 ? words[0] : "dgx1-p100";
  const std::string ranks_text = words.size() > 1 ? words[1] : "0,1";
  const std::string relays_text = words.size() > 2 ? words[2] : "2,3,4,5";

  // The plan with and without the relays, from the topology alone.
  canopy::CommunicatorOptions options;
  try {
    options.topology = canopy::load_topology(topology_name);
    options.gpus = split(ranks_text);
    options.relays = split(relays_text);
    canopy::PlanOptions alone;
    alone.gpus = options.gpus;
    canopy::PlanOptions relayed = alone;
    relayed.relay = true;
    relayed.relay_gpus = options.relays;
    const canopy::Plan without = canopy::plan(*options.topology, canopy::Collective::broadcast, alone);
    const canopy::Plan with = canopy::plan(*options.topology, canopy::Collective::broadcast, relayed);
    std::printf("broadcast on %s, ranks %s: %.2f GB/s alone, %.2f GB/s with relays %s (planned)\n",
                topology_name.c_str(), ranks_text.c_str(), without.algbw_gbps, with.algbw_gbps, relays_text.c_str());
  } catch (const canopy::Error& e) {
    std::fprintf(stderr, "canopy-example-relays: arguments '%s %s %s': %s\n", topology_name.c_str(),
                 ranks_text.c_str(), relays_text.c_str(), e.what());
    return 2;
  }

  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::fprintf(stderr, "canopy-example-relays: no GPU visible, so nothing runs: run it on a machine with a GPU\n");
    return 1;
  }
  options.devices = {0};  // every rank and every relay's forwarding on GPU 0
  std::unique_ptr<canopy::Communicator> comm;
  if (canopy::Status s = canopy::Communicator::create(options, &comm); !s.ok()) {
    std::fprintf(stderr, "create: %s\n", s.message().c_str());
    return 1;
  }

  const int ranks = comm->ranks();
  const std::size_t count = std::size_t{1} << 24;
  std::vector<float> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 4099);
  std::vector<void*> buffers(ranks, nullptr);
  std::vector<cudaStream_t> streams(ranks, nullptr);
  cudaSetDevice(0);
  for (int r = 0; r < ranks; ++r) {
    cudaMalloc(&buffers[r], count * sizeof(float));
    cudaMemset(buffers[r], 0, count * sizeof(float));
    cudaStreamCreate(&streams[r]);
  }
  cudaMemcpy(buffers[0], host.data(), count * sizeof(float), cudaMemcpyHostToDevice);
  const std::vector<const void*> send(buffers.begin(), buffers.end());
  if (canopy::Status s = comm->broadcast(send, buffers, count, canopy::DataType::f32, 0, streams); !s.ok()) {
    std::fprintf(stderr, "broadcast: %s\n", s.message().c_str());
    return 1;
  }
  std::size_t wrong = 0;
  std::vector<float> back(count);
  for (int r = 0; r < ranks; ++r) {
    cudaStreamSynchronize(streams[r]);
    cudaMemcpy(back.data(), buffers[r], count * sizeof(float), cudaMemcpyDeviceToHost);
    for (std::size_t i = 0; i < count; ++i) wrong += back[i] != host[i];
  }

  // What ran: the relays the plan crosses and what their rings take.
  canopy::CollectiveInfo info;
  const canopy::CollectiveSpec spec = comm->spec_of(canopy::Collective::broadcast, count, canopy::DataType::f32,
                                                    canopy::ReduceOp::sum, 0, /*in_place=*/true);
  if (canopy::Status s = comm->info(spec, &info); s.ok()) {
    const std::vector<std::string> crossed = canopy::relay_gpus_of(info.plan, comm->topology());
    std::printf("kernel %s crosses %zu relay GPU(s):", info.kernel.c_str(), crossed.size());
    for (std::size_t k = 0; k < info.relays.size(); ++k)
      std::printf(" %s %lld bytes of rings;", info.relays[k].c_str(), static_cast<long long>(info.relay_ring_bytes[k]));
    std::printf("\n");
  }
  std::printf("broadcast of %zu floats to %d ranks: %zu wrong\n", count, ranks, wrong);
  comm.reset();
  for (int r = 0; r < ranks; ++r) {
    cudaFree(buffers[r]);
    cudaStreamDestroy(streams[r]);
  }
  return wrong ? 1 : 0;
}
