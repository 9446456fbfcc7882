// ProcessGroup: the processes of a multi-process communicator (Communicator::join) and what each said when it joined:
// its host, pid, ranks, GPU (UUID, architecture, limits) and the Canopy version and topology it plans with. The facts
// travel as text in the bootstrap's join payload; check_process_facts refuses a group whose processes would plan
// differently (another version, topology, rank list or kernel shape), naming the process and the fix; place_processes
// turns the facts into a Placement in which each process is one device index (its ranks run in its own launch),
// so processes sharing a GPU are told apart. The pure parts are tested on any CPU.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "runtime/comm/placement.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/transport/bootstrap/bootstrap.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"

namespace canopy {

struct ProcessFacts {
  std::string version;   // library_version()
  std::string host;      // host identity (runtime/hosts/host_identity.hpp): CANOPY_HOST_ID, else hostname:boot id
  std::string hostname;  // for messages (empty from an older process: host is used)
  long pid = 0;
  int first_rank = 0;    // its ranks: first_rank .. first_rank + ranks - 1
  int ranks = 1;
  int nranks = 0;        // the communicator's ranks, as this process was told
  GpuDevice gpu;         // its GPU (ordinal in its own process)
  std::string plan_key;  // sha256 of what plans and kernels depend on: topology, rank list, kernel shape
  int gpu_sharers = 0;   // processes in all on its GPU, where more than the communicator's own (0: not given)
};

std::string encode_process_facts(const ProcessFacts& facts);
// Parses what encode_process_facts wrote; the error names the field.
Status decode_process_facts(const std::string& text, ProcessFacts* out);

// "process 1 (rank 1)", "process 1 (ranks 2..3)"; with `where`: ", pid 4242 on host box" inside the brackets.
std::string describe_process(const ProcessFacts& facts, int process, bool where);

// The first reason `all` (in process order) cannot form one communicator, or ok: another Canopy version or plan key
// than process 0's, rank blocks that do not tile 0 .. nranks - 1 in process order, a different nranks.
Status check_process_facts(const std::vector<ProcessFacts>& all);

// How many processes share GPU `uuid`: those of `all` on it, or more where one of them says so (gpu_sharers: other
// communicators' processes running at once); at least 1.
int gpu_sharers(const std::vector<ProcessFacts>& all, const std::string& uuid);

// Ranks named `rank_names` (topology GPUs, in rank order) placed on the processes of `all`; this process is `self`,
// running on CUDA ordinal `ordinal`. Device index = process; other processes' GPUs keep their facts but carry this
// process's ordinal (so setting the device there is harmless). peer: same GPU (UUID), else `can_reach(a, b)` (GPU
// UUID a reaches b's memory; empty: never). Processes sharing one GPU each get an equal share of its SMs in their
// device's limits (their grids must be resident together under MPS), preferring one block per SM of it; the share
// is 1/gpu_sharers(all, uuid). Throws canopy::Error.
Placement place_processes(std::vector<std::string> rank_names, const std::vector<ProcessFacts>& all, int self,
                          const std::function<bool(const std::string&, const std::string&)>& can_reach);

// The topology a multi-process communicator plans for when none is given and every process runs on one GPU: `nranks`
// GPUs gpu0 .. gpu{nranks-1}, each joined to one switch ("memory": the GPU's own memory, through which their ranks
// reach each other) by an NVLink-class link (whole 128-byte stores, one hop), all alike. Named "shared-gpu-N".
Topology shared_gpu_topology(int nranks);
// Whether every process of `all` runs on the same GPU (by UUID).
bool one_gpu(const std::vector<ProcessFacts>& all);

// Where a process lands in Communicator::split: processes of one color form a group, ordered by (key, process).
struct SplitPlace {
  int color = -1;   // negative: no group
  int index = -1;   // its place in the group
  int size = 0;     // the group's processes
  int leader = -1;  // the group's first process (it makes the group's UniqueId)
};
// Per process, from every process's (color, key); throws canopy::Error naming a process whose color is below -1.
std::vector<SplitPlace> plan_split(const std::vector<std::pair<int, int>>& color_key);

// The bootstrap group and descriptor channel of a joined communicator.
struct ProcessGroup {
  int process = 0;
  std::vector<ProcessFacts> facts;  // per process (which holds each rank: Placement::device_of_rank)
  std::unique_ptr<Bootstrap> bootstrap;
  std::unique_ptr<FdChannel> channel;
  int processes() const { return static_cast<int>(facts.size()); }
};

// The sharer count of a communicator made from `group`'s members (split()'s children, each host's inside
// communicator), which runs on this process's GPU beside the others: gpu_sharers over every member, or `given` (the
// new communicator's own option) where larger.
int inherited_gpu_sharers(const ProcessGroup& group, std::optional<int> given);

}  // namespace canopy
