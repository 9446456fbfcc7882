// PreparedCollective: one compiled collective loaded on a communicator's GPUs, ready to launch: its builds (one
// per GPU architecture), the kernel handle per device, its own zeroed counter area per rank (counters cannot be
// shared between plans, docs/codegen.md), its launch count (the epoch the counters carry) and the DeviceArgs
// image it fills per call. launch() starts one launch per device, all ranks of a device in one.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/jit/build.hpp"
#include "runtime/call/collective_call.hpp"
#include "runtime/launch/device_args_image.hpp"
#include "runtime/launch/launch_crew.hpp"
#include "runtime/transport/peer_memory.hpp"
#include "core/status.hpp"

namespace canopy {

// Where one relay participant's rings lie in its relay GPU's area (runtime/local/relay_scratch.hpp): the relay's
// index among the placement's relays, the bytes from the area's start, and their size.
struct RelayRing {
  int relay = 0;
  std::int64_t offset = 0;
  std::int64_t bytes = 0;
  friend bool operator==(const RelayRing&, const RelayRing&) = default;
};

// Each relay participant's rings in `schedule` (participants ranks .. participants() - 1), its relay GPU found in
// `relay_names`: the participants of one relay GPU take consecutive parts of its area, in participant order, each
// starting 256-byte aligned. Throws InternalError for a relay GPU not in `relay_names`.
std::vector<RelayRing> relay_rings(const Schedule& schedule, const std::vector<std::string>& relay_names);

struct PreparedCollective {
  std::shared_ptr<const BuiltCollective> built;  // the build of device 0's architecture (plan, schedule, source)
  CacheOutcome outcome = CacheOutcome::compiled;
  std::vector<cudaLibrary_t> libraries;     // one per distinct build
  std::vector<cudaKernel_t> kernel;         // per device index
  std::vector<int> blocks;                  // per device index
  int threads = 0;
  // Launched cooperatively (all blocks resident at once, or refused): needed wherever blocks of one launch wait on
  // each other; the low-latency kernels with one rank per GPU only wait on other GPUs, and launch faster without.
  bool cooperative = true;
  std::vector<void*> flags;  // per rank: flag_count x 128 bytes, zeroed, and a line for the count
  PeerMemory* peers = nullptr;  // what made `flags` and frees them (null: cudaMalloc'd, cudaFree'd)
  // Per device index: the kernel's launch counter on that GPU, the line after its first rank's counters. The kernels
  // take their epoch from it (templates/flags.cuh: begin_launch), so graph replays count too.
  std::vector<unsigned long long*> launches;
  std::uint64_t epoch = 0;  // launches so far, counted by the host: eager ones only (logs)
  // The plan-free kernels (templates/low_latency.cuh, ll128.cuh, direct.cuh) count launches in the communicator and
  // use its counters; the watchdog reads those by the protocol's layout.
  enum class Protocol { trees, low_latency, ll128, direct } protocol = Protocol::trees;
  Collective collective = Collective::allreduce;
  int root = 0;
  bool two_shot = false;                    // the low-latency and direct protocols' two-shot kernels
  bool own_buffers = false;                 // touches only its own rank's buffers (CollectiveSpec::own_buffers)
  int blocks_per_rank = 0;                  // plan-free kernels
  std::uint64_t last_epoch = 0;             // the latest launch's epoch, wherever it is counted
  // Blink+'s relay participants (the schedule's, after the ranks), each on its relay GPU's device: its own zeroed
  // counters (cudaMalloc'd there) and where its rings lie in that relay GPU's area (relay_rings).
  std::vector<void*> relay_flags;
  std::vector<RelayRing> relay_rings;
  DeviceArgsImage args;                     // DeviceArgs<ranks + relay participants>, filled per launch
  std::vector<Status> results;              // per device index: the latest launch's outcome

  ~PreparedCollective();  // unloads the libraries and frees the counters (the caller has synchronised)
};

// Launches of one communicator on one GPU must run in order (they share scratch): when a call comes on another
// stream than the last one used on that GPU, the new stream waits for the last one's work. The caller may have
// destroyed the last stream by then (any use of its handle may crash the driver), so the communicator never touches
// it: the first switch on a GPU waits for the whole GPU on the host, and from then on `done` is recorded after every
// launch on that GPU and a switch waits for it. Streams are told apart by their IDs (cudaStreamGetId, ~50 ns), not
// their handles: the CUDA runtime gives the next stream created the handle of one just destroyed (a small heap
// block), even while the destroyed one's work still runs. Calls that keep one stream, the common case, stay at one
// launch per GPU.
struct DeviceOrder {
  std::vector<cudaEvent_t> done;              // per device index: recorded after every launch once `switched`
  std::vector<unsigned long long> stream_id;  // per device index: the ID of the last launch's stream
  std::vector<char> used;      // per device index: launched before (not vector<bool>: helpers set theirs at once)
  std::vector<char> switched;  // per device index: a call has come on another stream than the last before
};

// A DeviceOrder for these devices (CUDA ordinals, by device index), its events made (launch/device_order.cpp). Throws
// canopy::Error.
DeviceOrder make_device_order(std::span<const int> ordinals);
void destroy_device_order(DeviceOrder& order);  // its events (the launches are done)
// The order across streams, for a launch and for work issued around it on device index d (a multi-process call's
// copies into and out of the staging area, which every call shares): order_stream before the first of it makes
// `stream` (ID `stream_id`) wait for the last stream's work; mark_done after the last of it records `done` there
// (once switched), so the next call on another stream waits for all of it, copies included.
cudaError_t order_stream(DeviceOrder& order, int d, cudaStream_t stream, unsigned long long stream_id);
cudaError_t mark_done(DeviceOrder& order, int d, cudaStream_t stream);
// Waits for every launch made through `order` on the GPUs it was used on: no event marks the last launch (one is
// recorded only after a stream switch), and its stream may be gone by now, so the whole GPU is waited for.
void wait_for_launches(const DeviceOrder& order, std::span<const int> ordinals);

// Where every rank's memory and each device's stream are, for one launch (views of the communicator's state).
struct LaunchTarget {
  std::span<const int> ordinal;     // per device index: CUDA ordinal
  std::span<const int> first_rank;  // per device index: its first rank (whose stream the launch uses)
  std::span<void* const> scratch;   // per rank
  DeviceOrder* order = nullptr;
  // Per rank: the ID of its stream, where the call's checks asked for it (0 or empty: the launch asks). A device
  // launches on its first rank's stream.
  std::span<const unsigned long long> stream_id = {};
  // The low-latency kernels' memory, shared by all of them: counters per rank (empty: the prepared collective's
  // own), the launch counter per device index (empty: its own) and the host's count (null: its own).
  std::span<void* const> flags = {};
  std::span<unsigned long long* const> launches = {};
  std::uint64_t* epoch = nullptr;
  // The streams are capturing a CUDA graph: nothing runs now, so no stream switch is ordered with events (the
  // graph's edges and the caller order its replays) and the host counts no launch.
  bool capturing = false;
  // The communicator has captured calls: the host's count misses replays, so the kernels read the GPUs' launch
  // counters (epoch 0 in the arguments) instead of taking the host's.
  bool device_epochs = false;
  // Launches every device at once through its helpers (not for a call on cudaStreamPerThread, the caller's own
  // stream); null: one after another.
  LaunchCrew* crew = nullptr;
  // Per device index: launched here (empty: every one). A multi-process communicator launches only its own.
  std::span<const char> here = {};
  // The communicator's abort word as the GPUs see it (AbortWord; null: none): set, every wait gives up.
  const unsigned int* abort = nullptr;
  // Where non-null, the time of the CUDA launch calls made on the caller's thread (not its helpers') is added here,
  // in nanoseconds (CANOPY_PROFILE_CALLS: the profile's `api` phase).
  std::uint64_t* api_ns = nullptr;
  std::span<void* const> relay_scratch = {};  // per relay participant of the prepared collective: its rings
};

// Fills the DeviceArgs image (count, launch counters, every rank's pointers, then every relay participant's: no
// buffer, its rings and counters) and launches on every device, on the
// stream of the device's first rank: all at once through target.crew, else one after another (stopping at the
// first failure). The calling thread ends on the device it began on (asked once a call). A failed launch leaves the
// other devices' kernels waiting: the Status says so, *partial_launch is set, and the communicator must not be used
// again.
Status launch(PreparedCollective& prepared, const CollectiveCall& call, const LaunchTarget& target,
              bool* partial_launch);

// The counters a launch with `target` uses, per rank: the target's, else the prepared collective's own.
std::span<void* const> launch_flags(const PreparedCollective& prepared, const LaunchTarget& target);
// Likewise its launch counters, per device index.
std::span<unsigned long long* const> launch_counters(const PreparedCollective& prepared, const LaunchTarget& target);

}  // namespace canopy
