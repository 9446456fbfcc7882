// fit_launch_shape (see launch_shape.hpp).
#include "runtime/jit/launch_shape.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/launch_grid.hpp"
#include "core/error.hpp"

namespace canopy {

namespace {
// Blocks per SM the grid needs on this device, or 0 when it cannot fit at `threads` threads a block.
int blocks_per_sm_needed(int blocks, int threads, const DeviceLimits& l) {
  const int per_sm = (blocks + l.sms - 1) / l.sms;
  if (per_sm > l.max_blocks_per_sm || per_sm * threads > l.max_threads_per_sm) return 0;
  if (per_sm > 1 && l.registers_per_sm / (per_sm * threads) < kMinRegistersPerThread) return 0;
  return per_sm;
}
}  // namespace

CodegenOptions fit_launch_shape(const Plan& plan, CodegenOptions options, const std::vector<DeviceLimits>& limits) {
  return fit_launch_shape([&](const CodegenOptions& o) { return launch_grid(plan, o); }, std::move(options), limits);
}

CodegenOptions fit_launch_shape(const algo::Program& program, CodegenOptions options,
                                const std::vector<DeviceLimits>& limits) {
  return fit_launch_shape([&](const CodegenOptions& o) { return launch_grid(program, o); }, std::move(options),
                          limits);
}

namespace {
// The options fit_to reached, and where they still do not fit: the device that cannot hold even one block per lane
// at the smallest blocks (64 threads or the options' own), else -1.
struct Fitted {
  CodegenOptions options;
  int misfit = -1;
  int misfit_blocks = 0;
  int misfit_ranks = 0;
};

// Halves blocks and then threads until every grid fits `limits`.
Fitted fit_to(const std::function<Schedule(const CodegenOptions&)>& grid_at, CodegenOptions options,
              const std::vector<DeviceLimits>& limits) {
  for (;;) {
    const Schedule s = grid_at(options);
    CANOPY_INTERNAL_ASSERT(limits.size() >= s.devices.size(), "device limits for fewer devices than the schedule uses");
    int cap = 1;
    const DeviceSchedule* worst = nullptr;
    for (const DeviceSchedule& d : s.devices) {
      const int per_sm = blocks_per_sm_needed(d.blocks, options.threads_per_block, limits[d.device]);
      if (per_sm == 0) {
        worst = &d;
        break;
      }
      cap = std::max(cap, per_sm);
    }
    if (!worst) {
      options.min_blocks_per_sm = cap > 1 ? cap : 0;
      return Fitted{options};
    }
    if (options.blocks_per_rank > 1) {
      options.blocks_per_rank /= 2;
    } else if (options.threads_per_block > 64) {
      options.threads_per_block /= 2;
    } else {
      return Fitted{options, worst->device, worst->blocks, static_cast<int>(worst->ranks.size())};
    }
  }
}
}  // namespace

CodegenOptions fit_launch_shape(const std::function<Schedule(const CodegenOptions&)>& grid_at, CodegenOptions options,
                                const std::vector<DeviceLimits>& limits) {
  // First at the blocks per SM the devices prefer (processes sharing a GPU: one), where the lanes fit so.
  std::vector<DeviceLimits> preferred = limits;
  bool prefers = false;
  for (DeviceLimits& l : preferred)
    if (l.preferred_blocks_per_sm > 0 && l.preferred_blocks_per_sm < l.max_blocks_per_sm) {
      l.max_blocks_per_sm = l.preferred_blocks_per_sm;
      prefers = true;
    }
  if (prefers) {
    const Fitted f = fit_to(grid_at, options, preferred);
    if (f.misfit < 0) return f.options;
  }
  const Fitted f = fit_to(grid_at, options, limits);
  if (f.misfit < 0) return f.options;
  const DeviceLimits& l = limits[f.misfit];
  const int threads = f.options.threads_per_block;  // as small as the fitting went
  throw Error(fmt::format("device {} runs {} ranks whose lanes need {} thread blocks at once (one per tree or "
                          "channel and rank, {} threads each), but it holds {} ({} SMs x {}): place fewer ranks "
                          "on it (more GPUs, or a plan over fewer GPUs)",
                          f.misfit, f.misfit_ranks, f.misfit_blocks, threads,
                          l.sms * std::min(l.max_blocks_per_sm, l.max_threads_per_sm / threads), l.sms,
                          std::min(l.max_blocks_per_sm, l.max_threads_per_sm / threads)));
}

}  // namespace canopy
