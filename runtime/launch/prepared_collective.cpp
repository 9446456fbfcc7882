// PreparedCollective and its launch (see prepared_collective.hpp).
#include "runtime/launch/prepared_collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

std::vector<RelayRing> relay_rings(const Schedule& s, const std::vector<std::string>& relay_names) {
  std::vector<RelayRing> rings;
  std::vector<std::int64_t> used(relay_names.size(), 0);
  for (int r = s.ranks; r < s.participants(); ++r) {
    const std::string& gpu = s.relays[r - s.ranks].gpu;
    const auto at = std::find(relay_names.begin(), relay_names.end(), gpu);
    CANOPY_INTERNAL_ASSERT(at != relay_names.end(), "a relay participant on a GPU that is not a relay");
    const int k = static_cast<int>(at - relay_names.begin());
    const std::int64_t bytes = s.resources[r].scratch_bytes;
    rings.push_back({k, used[k], bytes});
    used[k] += (bytes + 255) / 256 * 256;
  }
  return rings;
}

PreparedCollective::~PreparedCollective() {
  for (void* f : flags)
    if (f && peers)
      peers->free(f);
    else if (f)
      (void)cudaFree(f);
  for (void* f : relay_flags) (void)cudaFree(f);  // on their relays' devices: cudaFree takes any device's memory
  for (cudaLibrary_t l : libraries) (void)cudaLibraryUnload(l);
  (void)cudaGetLastError();
}

std::span<void* const> launch_flags(const PreparedCollective& p, const LaunchTarget& target) {
  return target.flags.empty() ? std::span<void* const>(p.flags) : target.flags;
}

std::span<unsigned long long* const> launch_counters(const PreparedCollective& p, const LaunchTarget& target) {
  return target.launches.empty() ? std::span<unsigned long long* const>(p.launches) : target.launches;
}

namespace {

// One launch's shared state while its devices are launched, from the caller and the launch crew's helpers.
struct LaunchJob {
  PreparedCollective* p;
  const CollectiveCall* call;
  const LaunchTarget* target;
  std::uint64_t* api_ns;  // the launch calls' time, where the caller's thread launches and target.api_ns asks
  // The caller's thread's current device where it launches one device after another (asked once a call, kept as
  // launches switch it); null on the launch crew's helpers, which ask.
  int* current = nullptr;
};

// The launch itself, on the current device: through the driver's cuLaunchKernelEx where the driver has it (the
// runtime's cudaLaunchKernelExC translates its arguments and then calls it), else through the runtime. Cooperative
// where p says so: a grid that cannot be resident is refused rather than hung. A failure in the driver's words goes
// to *error, and the result is then cudaErrorLaunchFailure.
cudaError_t launch_kernel(const PreparedCollective& p, int d, cudaStream_t stream, void** params, std::string* error) {
  const std::optional<int> r = driver_launch(reinterpret_cast<const void*>(p.kernel[d]), p.blocks[d], p.threads,
                                             stream, p.cooperative, params);
  if (r) {
    if (*r == 0) return cudaSuccess;
    *error = driver_error_text(*r);
    return cudaErrorLaunchFailure;
  }
  cudaLaunchAttribute cooperative{};
  cooperative.id = cudaLaunchAttributeCooperative;
  cooperative.val.cooperative = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(p.blocks[d]);
  config.blockDim = dim3(p.threads);
  config.stream = stream;
  config.attrs = &cooperative;
  config.numAttrs = p.cooperative ? 1 : 0;
  return cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(p.kernel[d]), params);
}

// Launches on device index d: its own DeviceOrder entries, the shared args image (read only).
Status launch_on_device(void* context, int d) {
  const LaunchJob& job = *static_cast<const LaunchJob*>(context);
  PreparedCollective& p = *job.p;
  const CollectiveCall& call = *job.call;
  const LaunchTarget& target = *job.target;
  int device = d;
  void* params[] = {p.args.data(), &device};
  const cudaStream_t stream = call.streams[target.first_rank[d]];
  DeviceOrder& order = *target.order;
  // A helper thread's device, and often the caller's, is already this one: asking costs less than switching.
  int asked = -1;
  int& current = job.current ? *job.current : asked;
  cudaError_t e = current >= 0 ? cudaSuccess : cudaGetDevice(&current);
  if (e != cudaSuccess || current != target.ordinal[d]) {
    e = cudaSetDevice(target.ordinal[d]);
    current = e == cudaSuccess ? target.ordinal[d] : -1;
  }
  unsigned long long id = target.stream_id.empty() ? 0 : target.stream_id[target.first_rank[d]];
  if (e == cudaSuccess && !target.capturing && id == 0) e = canopy::stream_id(stream, &id);
  // Another stream than last time: it first waits for everything issued on the last one (our launches included),
  // which may be destroyed by now (DeviceOrder): the first time by waiting for the GPU, then for `done`.
  if (e == cudaSuccess && !target.capturing) e = order_stream(order, d, stream, id);
  std::string launch_error;
  if (e == cudaSuccess) {
    const auto before = job.api_ns ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    e = launch_kernel(p, d, stream, params, &launch_error);
    if (job.api_ns)
      *job.api_ns += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - before).count());
  }
  if (e == cudaSuccess && target.capturing) return Status();
  if (e == cudaSuccess) e = mark_done(order, d, stream);
  if (e == cudaSuccess) return Status();
  (void)cudaGetLastError();
  if (launch_error.empty()) launch_error = fmt::format("{} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
  return Status(StatusCode::cuda_error,
                fmt::format("{}: launching {} on GPU {} ({} blocks x {} threads) failed: {}", call_name(call),
                            p.built->source.entry, target.ordinal[d], p.blocks[d], p.threads, launch_error));
}

}  // namespace

Status launch(PreparedCollective& p, const CollectiveCall& call, const LaunchTarget& target, bool* partial_launch) {
  const int ranks = static_cast<int>(p.flags.size());
  const int relays = static_cast<int>(p.relay_flags.size());
  if (target.relay_scratch.size() != p.relay_flags.size())
    return Status(StatusCode::internal, fmt::format("{}: {} launched with rings for {} of its {} relay participants",
                                                    call_name(call), p.built->source.entry,
                                                    target.relay_scratch.size(), relays));
  if (!target.capturing) p.last_epoch = ++(target.epoch ? *target.epoch : p.epoch);
  const std::span<void* const> flags = launch_flags(p, target);
  const std::span<unsigned long long* const> launches = launch_counters(p, target);
  const std::uint64_t epoch = target.device_epochs ? 0 : p.last_epoch;
  p.args.reset(ranks + relays);
  p.args.set_count(call.count);
  p.args.set_epoch(epoch);
  for (std::size_t d = 0; d < launches.size(); ++d) p.args.set_launch_counter(static_cast<int>(d), launches[d]);
  for (int r = 0; r < ranks; ++r)
    p.args.set_rank(r, RankPointers{call.send[r], call.recv[r], target.scratch[r],
                                    static_cast<unsigned long long*>(flags[r])});
  for (int k = 0; k < relays; ++k)  // a relay holds no user buffer
    p.args.set_rank(ranks + k, RankPointers{nullptr, nullptr, target.relay_scratch[k],
                                            static_cast<unsigned long long*>(p.relay_flags[k])});
  p.args.set_abort(target.abort);
  *partial_launch = false;
  LaunchJob job{&p, &call, &target, nullptr};
  const std::size_t devices = p.kernel.size();
  int launched = 0;
  const Status* failed = nullptr;
  // cudaStreamPerThread names the calling thread's own stream: a helper thread would launch on its own instead.
  bool per_thread = false;
  for (const cudaStream_t s : call.streams) per_thread |= s == cudaStreamPerThread;
  if (target.crew && devices > 1 && !per_thread) {  // every device at once: the failures and successes are both known
    CurrentDevice keep;  // the caller's own launches switch its thread's device
    target.crew->run(DeviceJob{&job, launch_on_device}, &p.results);
    for (const Status& s : p.results)
      if (s.ok())
        ++launched;
      else if (!failed)
        failed = &s;
  } else {  // one after another, stopping at the first failure, then back on the caller's device
    job.api_ns = target.api_ns;
    int caller = -1;
    if (cudaGetDevice(&caller) != cudaSuccess) {
      (void)cudaGetLastError();
      caller = -1;
    }
    int current = caller;
    job.current = &current;
    p.results.resize(devices);
    for (std::size_t d = 0; d < devices && !failed; ++d) {
      if (!target.here.empty() && !target.here[d]) {  // another process launches it
        p.results[d] = Status();
        continue;
      }
      p.results[d] = launch_on_device(&job, static_cast<int>(d));
      if (p.results[d].ok())
        ++launched;
      else
        failed = &p.results[d];
    }
    if (caller >= 0 && current != caller) (void)cudaSetDevice(caller);
  }
  if (!failed) return Status();
  *partial_launch = launched > 0;
  if (!*partial_launch) return *failed;
  return Status(StatusCode::cuda_error,
                failed->message() +
                    "; the launches already made on other GPUs wait for it forever: this communicator cannot be "
                    "used again");
}

}  // namespace canopy
