// one_hop_kernel (see one_hop_kernel.hpp): the launches, checks and rank tables of the plan-free kernels.
#include "codegen/one_hop_kernel.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "dsl/error.hpp"

namespace canopy {

KernelSource one_hop_kernel(const OneHopShape& s, const char* prefix, const char* what) {
  const int n = s.ranks;
  if (n < 1 || n > 1000) throw Error(fmt::format("{}: {} ranks; use 1 to 1000", what, n));
  if (has_root(s.collective) && (s.root < 0 || s.root >= n))
    throw Error(fmt::format("{}: root {} is not a rank (0..{})", what, s.root, n - 1));
  if (s.blocks_per_rank < 1 || s.blocks_per_rank > s.max_blocks_per_rank)
    throw Error(fmt::format("{}: {} blocks per rank; use 1 to {}", what, s.blocks_per_rank, s.max_blocks_per_rank));
  if (s.threads_per_block < 32 || s.threads_per_block > 1024 || s.threads_per_block % 32 != 0)
    throw Error(fmt::format("{}: {} threads per block; use a multiple of 32 up to 1024", what, s.threads_per_block));
  const std::vector<int> device_of_rank =
      s.device_of_rank && !s.device_of_rank->empty() ? *s.device_of_rank : block_placement(n, n);
  if (static_cast<int>(device_of_rank.size()) != n)
    throw Error(fmt::format("{}: {} device entries for {} ranks", what, device_of_rank.size(), n));
  const int devices = *std::max_element(device_of_rank.begin(), device_of_rank.end()) + 1;

  KernelSource k;
  k.name = fmt::format("{}_{}_r{}_d{}_b{}_{}{}", prefix, to_string(s.collective), n, devices, s.blocks_per_rank,
                       to_string(s.dtype), reduces(s.collective) ? "_" + to_string(s.op) : "");
  if (has_root(s.collective)) k.name += fmt::format("_root{}", s.root);
  k.entry = k.name;
  k.ranks = n;
  for (int d = 0; d < devices; ++d) {
    DeviceLaunch l{d, {}, 0, s.threads_per_block};
    for (int r = 0; r < n; ++r)
      if (device_of_rank[r] == d) l.ranks.push_back(r);
    if (l.ranks.empty())
      throw Error(fmt::format("{}: device {} runs no rank; number devices 0..{} without gaps", what, d, devices - 1));
    l.blocks = static_cast<int>(l.ranks.size()) * s.blocks_per_rank;
    k.launches.push_back(l);
  }
  k.resources.assign(n, RankResources{0, 0});
  return k;
}

std::string one_hop_tables_and_entry(const KernelSource& k, int threads_per_block, const char* run) {
  std::string out = "// The ranks each device runs, by the `device` argument.\n";
  for (const DeviceLaunch& l : k.launches)
    out += fmt::format("__device__ const int kRanksOf{}[] = {{{}}};\n", l.device, fmt::join(l.ranks, ", "));
  out += "__device__ const int* const kRanksOf[] = {";
  for (const DeviceLaunch& l : k.launches) out += fmt::format("{}kRanksOf{}", l.device == 0 ? "" : ", ", l.device);
  out += "};\n\n}  // namespace\n\n";
  out += fmt::format("extern \"C\" __global__ void __launch_bounds__({})\n{}(const Config::Args a, int device) {{\n",
                     threads_per_block, k.entry);
  out += fmt::format("  {}<Config>(a, kRanksOf[device]);\n}}\n", run);
  return out;
}

}  // namespace canopy
