// `canopy bench --procs N` (see bench_procs.hpp): the launcher's re-run of its own command line, a process's join,
// and NCCL's communicator over the same processes.
#include "tools/bench_procs.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/error.hpp"
#include "bench/harness/benchmark.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/detect/detect_topology.hpp"
#include "runtime/env/runtime_env.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {
namespace {

// This process's command line as it was started (/proc/self/cmdline), with argv[0] made this executable's path.
std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  for (std::size_t at = 0; at < raw.size();) {
    const std::size_t end = raw.find('\0', at);
    argv.push_back(raw.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (argv.empty() || n <= 0) throw Error("--procs: cannot read this process's command line to start the others");
  argv[0] = std::string(exe, static_cast<std::size_t>(n));
  return argv;
}

}  // namespace

bool launch_bench_processes(int procs, int* code) {
  const char* id = std::getenv("CANOPY_UNIQUE_ID");
  if (id && *id) return false;
  *code = run_processes(procs, own_command_line());
  return true;
}

std::unique_ptr<Communicator> join_bench_process(int procs, CommunicatorOptions options) {
  const int rank = env_int("CANOPY_RANK", -1, "a rank number");
  const int nranks = env_int("CANOPY_NRANKS", -1, "a number of ranks");
  if (nranks != procs || rank < 0 || rank >= procs)
    throw Error(fmt::format("--procs {}: this process is CANOPY_RANK {} of CANOPY_NRANKS {}: start it with the same "
                            "number of processes (canopy run -n {}), or without a launcher",
                            procs, rank, nranks, procs));
  UniqueId id;
  if (Status s = parse_unique_id(std::getenv("CANOPY_UNIQUE_ID"), &id); !s.ok())
    throw Error("CANOPY_UNIQUE_ID: " + s.message());
  int visible = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&visible); e != cudaSuccess || visible == 0)
    throw Error(fmt::format("--procs: no GPU is visible ({})", e == cudaSuccess ? "none" : cudaGetErrorString(e)));
  std::vector<int> devices = options.devices;
  if (devices.empty())
    for (int d = 0; d < visible; ++d) devices.push_back(d);
  const int local = env_int("CANOPY_LOCAL_RANK", rank, "a rank number on this host");
  options.devices = {devices[static_cast<std::size_t>(local) % devices.size()]};
  if (!options.topology && devices.size() > 1) {
    if (static_cast<int>(devices.size()) < procs)
      throw Error(fmt::format("--procs {} on {} GPUs: processes on several GPUs need a topology naming one GPU per "
                              "process: give -t (and --gpus)",
                              procs, devices.size()));
    options.topology = detect_topology(std::vector<int>(devices.begin(), devices.begin() + procs)).topology;
  }
  std::unique_ptr<Communicator> comm;
  if (Status s = Communicator::join(id, procs, rank, options, &comm); !s.ok())
    throw Error(fmt::format("process {} of {}: {}", rank, procs, s.message()));
  return comm;
}

std::unique_ptr<Communicator> command_communicator(int procs, const CommunicatorOptions& options, int* launcher_code) {
  *launcher_code = 0;
  if (procs > 0) {
    if (launch_bench_processes(procs, launcher_code)) return nullptr;
    return join_bench_process(procs, options);
  }
  std::unique_ptr<Communicator> comm;
  if (Status s = Communicator::create(options, &comm); !s.ok()) throw Error(s.message());
  return comm;
}

std::unique_ptr<NcclBaseline> nccl_beside(Communicator& comm) {
  if (!comm.multi_process() && comm.ranks() != comm.devices())
    throw Error(fmt::format("--vs-nccl needs one rank per GPU (NCCL refuses ranks sharing one); this run has {} ranks "
                            "on {} GPUs: give --procs {} with a distinct NCCL_HOSTID per process",
                            comm.ranks(), comm.devices(), comm.ranks()));
  std::string why;
  std::unique_ptr<NcclBaseline> nccl = NcclBaseline::load(&why);
  if (!nccl) throw Error("--vs-nccl: " + why);
  const Status s = comm.multi_process() ? init_nccl_processes(comm, *nccl) : nccl->init(comm.device_ordinals());
  if (!s.ok()) throw Error(s.message());
  return nccl;
}

Status init_nccl_processes(Communicator& comm, NcclBaseline& nccl) {
  NcclBaseline::UniqueId id{};
  if (comm.first_own_rank() == 0)
    if (Status s = nccl.unique_id(&id); !s.ok()) return s;
  const int ordinal = comm.device_of_rank(comm.first_own_rank());
  CurrentDevice keep;
  if (const cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) return cuda_status(e, "cudaSetDevice");
  cudaStream_t stream = nullptr;
  if (const cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess)
    return cuda_status(e, "cudaStreamCreate");
  const Status s = collective_on_host(comm, Collective::broadcast, id.data(), id.size(), DataType::u8, ReduceOp::sum,
                                      0, std::vector<cudaStream_t>(comm.own_ranks(), stream));
  (void)cudaStreamDestroy(stream);
  if (!s.ok()) return s;
  return nccl.init_rank(ordinal, comm.ranks(), comm.first_own_rank(), id);
}

}  // namespace canopy::cli
