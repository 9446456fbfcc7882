// ProtocolTable: which kernel a call of a given collective and size takes, decided once per call (choose()).
// Built once per communicator by make_protocol_table from the settings (options, else the environment, else the
// defaults), the limits `canopy tune --protocols` chose for this machine (tuning.json) and what the GPUs allow (peer
// access, NVLink hops, SMs): a protocol the GPUs cannot run, or whose buffers would not fit, is turned off with a
// log line saying why. Pure: no CUDA, so every rule is tested on any CPU (tests/runtime/protocol/).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/collective.hpp"
#include "core/logger.hpp"
#include "runtime/env/runtime_env.hpp"
#include "runtime/protocol/protocol_choice.hpp"

namespace canopy {

constexpr std::size_t kCollectives = static_cast<std::size_t>(Collective::reducescatter) + 1;

// A line protocol (low-latency, LL128) whose buffers for its largest limit would take more than this on a GPU is
// left off rather than take memory the caller may need.
constexpr std::int64_t kMaxLineBufferBytesPerGpu = std::int64_t{1} << 30;

// The protocols as asked for (CommunicatorOptions, else the environment, else the defaults).
struct ProtocolSettings {
  LowLatencyShape low_latency;  // max_bytes 0: off
  LL128Shape ll128;
  DirectShape direct;
  std::int64_t ll_two_shot_bytes = 0;                  // 0: never
  std::optional<std::int64_t> direct_two_shot_bytes;  // unset: direct_two_shot_default_bytes
  EngineShape engine;
  bool use_tuned = true;     // take tuning.json's limits where it has some (no limit given by options or environment)
  bool ll128_given = false;  // LL128's limit given: not its per-collective default
  bool direct_given = false;  // the direct protocol's limit given (CANOPY_DIRECT_BYTES, options)
  bool direct_blocks_given = false;  // its blocks per rank given (CANOPY_DIRECT_BLOCKS)
  // Per collective, the pieces the direct inbox kernels move each block's part in (0: whole parts; set_up_protocols).
  std::array<std::int64_t, kCollectives> inbox_piece_bytes{};
  // Per collective, the most bytes the busiest link of a direct call carries, in place of direct.max_bytes (one for
  // all; it stays the largest): set for processes running the inbox kernels on their own buffers across GPUs, unless
  // the limit is given (use_inbox_limits; direct_own_buffers_default_bytes).
  std::optional<std::array<std::int64_t, kCollectives>> direct_moved_limits;
  // The direct calls run the inbox kernels (processes on their own buffers), where no rank reads another's buffer: an
  // allreduce in place runs two-shot only from the limit for its size, as every other call.
  bool direct_inbox = false;
  // Every rank is a process of its own on a GPU of its own, running the inbox kernels: LL128's default limits for
  // three and four ranks apply (ll128_default_bytes).
  bool inbox_on_own_gpus = false;
  std::string tuned_from;    // where tuned limits come from (tuning.json's path), for the log
};

// What the communicator's GPUs allow, found once at creation.
struct ProtocolFacts {
  int ranks = 2;
  int devices = 2;
  int min_sms = 132;               // the fewest SMs of any GPU
  std::string no_peer_access;      // why some pair of GPUs has no peer access ("" when every pair has it)
  std::string no_nvlink_hop;       // why some pair of ranks is not one NVLink hop apart ("" when every pair is)
};

// What a call takes: the protocol (Protocol::planned: the planned trees, or the copy engines where copy_engine says
// so), its two-shot variant (low-latency allreduce; direct allreduce, broadcast, reduce) and the copy engines.
struct ProtocolPick {
  Protocol protocol = Protocol::planned;
  bool two_shot = false;
  bool copy_engine = false;  // the size the copy engines move (the call still needs to be out of place for most)
};

class ProtocolTable {
 public:
  // A call of `collective` whose size is S = `bytes` (nccl-tests' size: allgather's output, reduce-scatter's input,
  // else the buffer), `in_place` when some rank's receive buffer is its send buffer.
  ProtocolPick choose(Collective collective, std::uint64_t bytes, bool in_place = false) const;

  // Whether a direct call of `collective` at S `bytes` runs two-shot: an allreduce in place always (one-shot's ranks
  // would read inputs being overwritten; not so for the inbox kernels), else from the limit for its collective.
  bool direct_two_shot(Collective collective, std::uint64_t bytes, bool in_place) const;
  bool engine_collective(Collective collective) const;  // the copy engines on and this collective one they move
  bool engine_sized(Collective collective, std::uint64_t bytes) const;

  // The shapes after fitting (max_bytes 0: the protocol is off): the line protocols' max_bytes is the largest limit
  // of any collective, what their buffers hold.
  const LowLatencyShape& low_latency() const { return low_latency_; }
  const LL128Shape& ll128() const { return ll128_; }
  const DirectShape& direct() const { return direct_; }
  const EngineShape& engine() const { return engine_; }
  std::int64_t ll_limit(Collective c) const { return ll_limit_[static_cast<std::size_t>(c)]; }
  std::int64_t ll128_limit(Collective c) const { return ll128_limit_[static_cast<std::size_t>(c)]; }
  std::optional<std::int64_t> direct_limit(Collective c) const { return direct_limit_[static_cast<std::size_t>(c)]; }
  // The pieces the direct inbox kernels of `c` move each block's part in (0: whole parts).
  std::int64_t inbox_piece_bytes(Collective c) const { return inbox_piece_bytes_[static_cast<std::size_t>(c)]; }

 private:
  friend ProtocolTable make_protocol_table(const ProtocolSettings&, const ProtocolFacts&,
                                           const std::function<std::optional<ProtocolLimits>(Collective)>&, const Logger&);
  int ranks_ = 2;
  int devices_ = 2;  // the GPUs the ranks are on
  bool direct_inbox_ = false;
  std::array<std::int64_t, kCollectives> ll_limit_{};
  std::array<std::int64_t, kCollectives> ll128_limit_{};
  std::array<std::optional<std::int64_t>, kCollectives> direct_limit_;  // tuned limits on S (unset: direct_moved_)
  std::array<std::int64_t, kCollectives> direct_moved_{};  // limits on the bytes the busiest link carries
  std::array<std::int64_t, kCollectives> inbox_piece_bytes_{};
  LowLatencyShape low_latency_;
  LL128Shape ll128_;
  DirectShape direct_;
  std::int64_t ll_two_shot_bytes_ = 0;
  std::optional<std::int64_t> direct_two_shot_bytes_;
  EngineShape engine_;
};

// Processes running the inbox kernels across GPUs with no direct limit given: the per-collective limits on the busiest
// link (direct_own_buffers_default_bytes for `ranks`) in place of the one, which rises to the largest of them (it stays
// their ceiling; the inboxes grow with the calls).
void use_inbox_limits(ProtocolSettings* settings, int ranks);

// `tuned` gives the limits tuning.json holds for this machine and a collective (nullopt: none; unused when the
// settings say not to use them). Logs, on `log`'s init subsystem, every protocol turned off and why.
ProtocolTable make_protocol_table(const ProtocolSettings& settings, const ProtocolFacts& facts,
                                  const std::function<std::optional<ProtocolLimits>(Collective)>& tuned, const Logger& log);

}  // namespace canopy
