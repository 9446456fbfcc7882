// Reading the runtime's CANOPY_ variables (see runtime_env.hpp).
#include "runtime/env/runtime_env.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "codegen/direct_source.hpp"
#include "core/error.hpp"
#include "planner/plan_json.hpp"

namespace canopy {

int env_int(const char* name, int fallback, const char* takes) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  const std::string_view text(v);
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    throw Error(fmt::format("{}='{}': expected {}", name, text, takes));
  return value;
}

namespace {
std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

// A 0/1 variable (default `fallback`); anything else is refused, naming what each value does.
bool env_switch(const char* name, bool fallback, const char* off, const char* on) {
  const std::string takes = fmt::format("0 ({}) or 1 ({})", off, on);
  const int v = env_int(name, fallback ? 1 : 0, takes.c_str());
  if (v != 0 && v != 1) throw Error(fmt::format("{}={}: use {}", name, v, takes));
  return v == 1;
}
}  // namespace

CodegenOptions shape_from_environment() {
  CodegenOptions o;
  if (const auto chunk = env("CANOPY_CHUNK")) o.chunk_bytes = parse_byte_size(*chunk, "CANOPY_CHUNK");
  o.blocks_per_rank = env_int("CANOPY_BLOCKS", o.blocks_per_rank, "thread blocks per rank, e.g. 24");
  o.threads_per_block = env_int("CANOPY_THREADS", o.threads_per_block, "threads per block, e.g. 512");
  o.fifo_depth = env_int("CANOPY_FIFO_DEPTH", o.fifo_depth, "FIFO slots per reduce edge, e.g. 4");
  if (const auto pull = env("CANOPY_PULL")) set_pull(o, *pull, "CANOPY_PULL");
  return o;
}

LargeMessageShape large_shape_from_environment(int small_blocks) {
  LargeMessageShape l;
  if (const auto bytes = env("CANOPY_LARGE_BYTES")) l.min_bytes = parse_byte_size(*bytes, "CANOPY_LARGE_BYTES");
  if (env("CANOPY_BLOCKS")) l.blocks_per_rank = small_blocks;  // an explicit choice holds for every size
  l.blocks_per_rank = env_int("CANOPY_LARGE_BLOCKS", l.blocks_per_rank, "thread blocks per rank, e.g. 128");
  if (const auto bytes = env("CANOPY_HUGE_BYTES")) l.huge_min_bytes = parse_byte_size(*bytes, "CANOPY_HUGE_BYTES");
  if (env("CANOPY_BLOCKS")) l.huge_blocks_per_rank = small_blocks;
  l.huge_blocks_per_rank = env_int("CANOPY_HUGE_BLOCKS", l.huge_blocks_per_rank, "thread blocks per rank, e.g. 128");
  l.blocks_given = env("CANOPY_BLOCKS") || env("CANOPY_LARGE_BLOCKS");
  l.huge_given = env("CANOPY_HUGE_BYTES") || env("CANOPY_HUGE_BLOCKS");
  return l;
}

// PREFIX_BYTES, PREFIX_BLOCKS and PREFIX_THREADS over the defaults in `shape`.
static OneLaunchShape one_launch_shape_from_environment(const std::string& prefix, OneLaunchShape shape) {
  const std::string bytes = prefix + "_BYTES", blocks = prefix + "_BLOCKS", threads = prefix + "_THREADS";
  if (const auto v = env(bytes.c_str())) shape.max_bytes = parse_byte_size(*v, bytes);
  shape.blocks_per_rank = env_int(blocks.c_str(), shape.blocks_per_rank, "thread blocks per rank, e.g. 32");
  shape.threads_per_block = env_int(threads.c_str(), shape.threads_per_block, "threads per block, e.g. 512");
  return shape;
}

LowLatencyShape low_latency_shape_from_environment() {
  return one_launch_shape_from_environment("CANOPY_LL", {std::int64_t{256} << 10, 32, 512});
}

// The byte size in variable `name`, when it is set.
static std::optional<std::int64_t> byte_size_from_environment(const char* name) {
  if (const auto v = env(name)) return parse_byte_size(*v, name);
  return std::nullopt;
}

std::optional<std::int64_t> ll_two_shot_bytes_from_environment() {
  return byte_size_from_environment("CANOPY_LL_TWO_SHOT_BYTES");
}

std::int64_t ll_two_shot_default_bytes(int ranks) {
  if (ranks <= 3) return 0;
  return std::int64_t{ranks < 8 ? 192 : ranks < 16 ? 96 : 48} << 10;
}

LL128Shape ll128_shape_from_environment() {
  return one_launch_shape_from_environment("CANOPY_LL128", {kDefaultLL128Bytes, 64, 512});
}

DirectShape direct_shape_from_environment() {
  return one_launch_shape_from_environment("CANOPY_DIRECT", {std::int64_t{32} << 20, 32, 512});
}

std::int64_t direct_own_buffers_default_bytes(Collective collective, int ranks) {
  if (has_root(collective) || ranks <= 2) return std::int64_t{has_root(collective) ? 32 : 16} << 20;
  return std::int64_t{collective == Collective::allreduce ? 96 : 48} << 20;
}

int direct_own_buffers_default_blocks() { return 64; }

std::int64_t direct_own_buffers_default_piece_bytes(Collective collective) {
  return has_root(collective) ? std::int64_t{64} << 10 : 0;
}

std::optional<std::int64_t> direct_two_shot_bytes_from_environment() {
  return byte_size_from_environment("CANOPY_DIRECT_TWO_SHOT_BYTES");
}

std::int64_t direct_two_shot_default_bytes(Collective collective, int ranks, int devices) {
  if (ranks <= 2 || !direct_has_two_shot(collective)) return 0;
  const bool rooted = collective == Collective::broadcast || collective == Collective::reduce;
  if (rooted && ranks >= 4 && devices == ranks) return std::int64_t{1} << 20;
  if (collective == Collective::broadcast) return 0;
  if (collective == Collective::reduce) return std::int64_t{ranks < 8 ? 4 : 2} << 20;
  return std::int64_t{ranks == 3 ? 2048 : ranks < 6 ? 1024 : ranks < 8 ? 384 : 256} << 10;
}

std::int64_t direct_inbox_two_shot_default_bytes(Collective collective, int ranks) {
  return ranks <= 2 || !direct_has_two_shot(collective) ? 0 : std::int64_t{2} << 20;
}

std::int64_t ll128_default_bytes(Collective collective, int ranks, int devices, bool inbox) {
  if (devices != ranks) return 0;
  if (ranks == 2) return std::int64_t{collective == Collective::allreduce ? 1 : 2} << 20;
  if (!inbox || (ranks != 3 && ranks != 4)) return 0;
  if (collective == Collective::allreduce) return std::int64_t{512} << 10;
  return std::int64_t{collective == Collective::broadcast ? 1 : 2} << 20;
}

CallCheck check_calls_from_environment() {
  const char* v = std::getenv("CANOPY_CHECK_CALLS");
  if (!v || !*v) return CallCheck::host;
  const std::string_view text(v);
  if (text == "0") return CallCheck::off;
  if (text == "1") return CallCheck::round_trip;
  throw Error(fmt::format("CANOPY_CHECK_CALLS='{}': use 0 (compare no calls), 1 (compare every call through the "
                          "bootstrap root too, a round trip per call, covering other hosts) or leave it unset (compare "
                          "them through the shared pages of each host's processes, the default)",
                          text));
}

bool stage_only_shared_from_environment() {
  return env_switch("CANOPY_STAGE_ONLY_SHARED", false,
                    "stage every buffer of a multi-process direct call, the default",
                    "stage only the buffers other ranks read or write");
}

bool own_buffers_from_environment() {
  return env_switch("CANOPY_OWN_BUFFERS", true,
                    "stage every buffer of a multi-process planned-trees or direct call",
                    "run the planned trees and direct kernels on their own rank's buffers alone, unstaged, the "
                    "default");
}

bool peer_buffers_from_environment() {
  return env_switch("CANOPY_PEER_BUFFERS", true, "run the direct protocol across processes through the inboxes",
                    "let the direct kernels of two processes on two GPUs read (allgather: write) each other's "
                    "buffers, mapped through CUDA IPC, the default");
}

std::optional<std::int64_t> inbox_piece_bytes_from_environment() {
  const auto v = env("CANOPY_INBOX_PIECE_BYTES");
  if (!v) return std::nullopt;
  const std::int64_t bytes = parse_byte_size(*v, "CANOPY_INBOX_PIECE_BYTES");
  if (bytes < 0 || bytes % 16 != 0)
    throw Error(fmt::format("CANOPY_INBOX_PIECE_BYTES='{}': use 0 (whole parts) or a positive multiple of 16 bytes, "
                            "e.g. 64KiB",
                            *v));
  return bytes;
}

PairRingShape pair_ring_shape_from_environment() {
  PairRingShape shape;
  if (const auto v = env("CANOPY_P2P_SLOT_BYTES")) {
    const std::int64_t bytes = parse_byte_size(*v, "CANOPY_P2P_SLOT_BYTES");
    if (bytes < 256 || bytes % 256 != 0)
      throw Error(fmt::format("CANOPY_P2P_SLOT_BYTES='{}': give a multiple of 256 bytes, at least 256, e.g. 1MiB", *v));
    shape.slot_bytes = static_cast<std::size_t>(bytes);
  }
  shape.slots = env_int("CANOPY_P2P_SLOTS", shape.slots, "a count of slots, 1 to 64, e.g. 4");
  if (shape.slots < 1 || shape.slots > 64)
    throw Error(fmt::format("CANOPY_P2P_SLOTS={}: give 1 to 64 slots per ring, e.g. 4", shape.slots));
  return shape;
}

bool profile_calls_from_environment() {
  return env_switch("CANOPY_PROFILE_CALLS", false, "no profile, the default",
                    "time each call's phases and print the means when the communicator goes");
}

bool check_pointers_from_environment() {
  return env_switch("CANOPY_CHECK_POINTERS", true, "skip the driver's pointer queries", "ask them, the default");
}

LaunchThreads launch_threads_from_environment() {
  LaunchThreads t;
  t.enabled = env_switch("CANOPY_LAUNCH_THREADS", true, "launch on every GPU from the caller",
                         "a helper thread per GPU after the first, the default");
  const int spin = env_int("CANOPY_LAUNCH_SPIN_US", static_cast<int>(t.spin.count()),
                           "microseconds a launch helper waits for work before sleeping, e.g. 200");
  if (spin < 1 || spin > 10'000'000)
    throw Error(
        fmt::format("CANOPY_LAUNCH_SPIN_US={}: use 1 to 10000000 microseconds (default 200); "
                    "CANOPY_LAUNCH_THREADS=0 turns the helpers off",
                    spin));
  t.spin = std::chrono::microseconds(spin);
  return t;
}

HybridShape hybrid_shape_from_environment() {
  HybridShape h;
  if (const auto bytes = env("CANOPY_HYBRID_BYTES")) {
    h.min_bytes = parse_byte_size(*bytes, "CANOPY_HYBRID_BYTES");
    h.given = true;
  }
  if (const auto v = env("CANOPY_HYBRID_SHARE")) {
    double share = -1;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), share);
    if (ec != std::errc() || end != v->data() + v->size() || !(share >= 0 && share <= 0.5))
      throw Error(
          fmt::format("CANOPY_HYBRID_SHARE='{}': expected the share of a broadcast's bytes staged through "
                      "host memory, 0 to 0.5, e.g. 0.12 (unset: from the topology's link rates)",
                      *v));
    h.share = share;
  }
  return h;
}

std::int64_t EngineShape::min_bytes_for(Collective collective) const {
  if (min_bytes) return *min_bytes;
  switch (collective) {
    case Collective::broadcast:
      return std::int64_t{64} << 20;
    case Collective::allreduce:
      return std::int64_t{128} << 20;
    case Collective::reduce:
      return std::int64_t{256} << 20;
    default:
      return 0;
  }
}

EngineShape engine_shape_from_environment() {
  EngineShape e;
  if (const auto bytes = env("CANOPY_ENGINE_BYTES")) e.min_bytes = parse_byte_size(*bytes, "CANOPY_ENGINE_BYTES");
  if (const auto chunk = env("CANOPY_ENGINE_CHUNK")) {
    e.chunk_bytes = parse_byte_size(*chunk, "CANOPY_ENGINE_CHUNK");
    if (e.chunk_bytes % 4096 != 0)
      throw Error(
          fmt::format("CANOPY_ENGINE_CHUNK='{}': the copy engines' chunk must be a multiple of 4 KiB, e.g. "
                      "64MiB, or 0 for the schedule sized to each call (the default)",
                      *chunk));
  }
  e.fd_buffers = env_switch("CANOPY_ENGINE_FD_BUFFERS", true,
                            "move calls into this process's cuMemCreate receive buffers on the kernels",
                            "send the other process the descriptors of this process's cuMemCreate receive buffers, for "
                            "the copy engines, the default");
  return e;
}

std::optional<Plan> plan_file_for(Collective collective, const std::vector<std::string>& ranks,
                                  const std::string& root) {
  const auto path = env("CANOPY_PLAN_FILE");
  if (!path) return std::nullopt;
  std::ifstream in(*path, std::ios::binary);
  if (!in) throw Error(fmt::format("CANOPY_PLAN_FILE='{}' cannot be read: check the path", *path));
  std::ostringstream text;
  text << in.rdbuf();
  Plan p = plan_from_json(text.str(), *path);
  if (p.collective != collective) return std::nullopt;
  if (p.ranks != ranks)
    throw Error(fmt::format("CANOPY_PLAN_FILE '{}' plans {} over ranks {}, but this communicator's ranks are {}: "
                            "make the plan for these GPUs",
                            *path, to_string(collective), fmt::join(p.ranks, ","), fmt::join(ranks, ",")));
  if (!root.empty() && p.root != root) return std::nullopt;  // a plan for another root: plan this one
  return p;
}

namespace {
// Seconds in `name` (0: off), `fallback` when unset.
std::optional<double> seconds_from_environment(const char* name, std::optional<double> fallback) {
  const auto v = env(name);
  if (!v) return fallback;
  double seconds = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), seconds);
  if (ec != std::errc() || end != v->data() + v->size() || seconds < 0)
    throw Error(fmt::format("{}='{}': expected seconds, e.g. 10 (0: off)", name, *v));
  if (seconds == 0) return std::nullopt;
  return seconds;
}
}  // namespace

std::optional<double> watchdog_seconds_from_environment() {
  return seconds_from_environment("CANOPY_WATCHDOG_S", std::nullopt);
}

std::optional<double> stall_seconds_from_environment() {
  return seconds_from_environment("CANOPY_STALL_TIMEOUT_S", 8.0);
}

int gpu_sharers_from_environment() {
  const int n = env_int("CANOPY_GPU_SHARERS", 0, "a process count >= 0, e.g. 4");
  if (n < 0) throw Error(fmt::format("CANOPY_GPU_SHARERS={}: expected a process count >= 0, e.g. 4", n));
  return n;
}

}  // namespace canopy
