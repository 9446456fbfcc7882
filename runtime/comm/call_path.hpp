// CallPath: one way of running a communicator, behind the Communicator handle (communicator.hpp), which forwards every
// call to it: one process driving its GPUs (local/), the processes of one host (processes/), or several hosts
// (hosts/: each host's processes inside, the real NCCL between hosts). The factory (factory/) picks one at create,
// join or split, once; nothing else asks which one runs. Each implementation holds its own state and the services
// it was handed; the shared answers below are its own (across hosts: no kernels of its own, so no tuning, a default
// protocol table, nothing staged).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "runtime/call/collective_call.hpp"
#include "runtime/call/point_to_point.hpp"
#include "runtime/comm/collective_spec.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/communicator_layout.hpp"
#include "runtime/protocol/protocol_table.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy {

class CombineKernels;
class CallPath;

// A join of the factory, as ways of running that make others call it (a split's new communicator, each host's
// processes): this process's part of the communicator of `nranks` ranks `id` names, `own_ranks` of them from `rank`.
using JoinPath = std::function<Status(const UniqueId& id, int nranks, int rank, const CommunicatorOptions& options,
                                      int own_ranks, std::unique_ptr<CallPath>* out)>;

class CallPath {
 public:
  virtual ~CallPath() = default;

  // What it runs over (topology, placement, configuration), this process's ranks, and its kernels' forms.
  virtual const CommunicatorLayout& layout() const = 0;
  virtual int own_ranks() const = 0;
  virtual int first_own_rank() const = 0;
  virtual bool on_own_buffers() const = 0;
  virtual bool on_peer_buffers() const = 0;
  // Chunk tuning: this machine's key in tuning.json, the file, and the chunk a call of this size takes (0: none).
  virtual const std::string& machine_key() const = 0;
  virtual std::filesystem::path tuning_path() const = 0;
  virtual std::int64_t tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const = 0;

  // What a call of a given size takes; never plans nor compiles (Communicator's queries of the same names).
  virtual const ProtocolTable& protocols() const = 0;
  virtual bool engines_take(Collective collective, std::uint64_t bytes) const = 0;  // is_copy_engine
  virtual std::uint64_t staged_count(Collective collective, std::uint64_t count, DataType dtype, int root) = 0;
  virtual Communicator::Choice choice(Collective collective, std::uint64_t count, DataType dtype, int root,
                                      bool in_place) = 0;
  // The spec of the kernel a call of this shape runs (an avg as its sum), for Communicator::spec_of.
  virtual CollectiveSpec spec_of(const CollectiveCall& call, bool in_place) = 0;

  // Calls and their kernels (Communicator's members of the same names).
  virtual Status run(const CollectiveCall& call) = 0;
  virtual Status prepare(std::span<const CollectiveSpec> specs) = 0;
  virtual Status prepare(const CollectiveCall& call) = 0;
  virtual Status info(const CollectiveSpec& spec, CollectiveInfo* out) = 0;
  virtual Status scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype,
                       const void* device_scalar, const void* host_scalar, cudaStream_t stream) = 0;
  // A group of sends and receives (Communicator::send_recv). The default refuses it, naming the way of running:
  // across hosts point-to-point is a later part of issue 68 (one process's ranks and the processes of one host serve
  // it).
  virtual Status send_recv(std::span<const PointToPoint> ops);
  // The element-wise kernels (combining, avg's division) of this process's GPU (its first own rank's), loaded once.
  virtual Status combining_kernels(const CombineKernels** out) = 0;

  // With the other processes: host data through the bootstrap root, and a split (`join` makes this process's new
  // communicator; *out stays null for a process that joins none).
  virtual Status exchange(std::string mine, std::vector<std::string>* all) = 0;
  virtual Status split(int color, int key, const CommunicatorOptions& options, const JoinPath& join,
                       std::unique_ptr<CallPath>* out) = 0;

  // Failure and teardown (Communicator's members of the same names).
  virtual Status abort() = 0;
  virtual Status fail(const std::string& why) = 0;
  virtual void leave_at_exit() = 0;
  virtual Status async_error() = 0;

 protected:
  // ok, or the error of `what` (a call taking one rank, as "scale") naming `rank` where this process holds ranks
  // `first` .. `first` + `own` - 1.
  static Status check_own_rank(const char* what, int rank, int first, int own);
};

}  // namespace canopy
