// Protocol limits chosen by measurement (`canopy tune --protocols`): per collective, up to which size each one-launch
// protocol takes a call. The runtime tries them in one order (low-latency, LL128, direct, then the planned trees or
// copy engines), so a choice is three limits, and choose_protocol_limits picks the three that cost least over a
// table of measured times, as a pure function the tests drive with made-up tables.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace canopy {

// The protocols in the order the runtime tries them. `planned` is whatever a call takes with the other three off:
// the planned trees' kernels, or the copy engines where they move that size.
enum class Protocol { low_latency = 0, ll128 = 1, direct = 2, planned = 3 };
constexpr int kProtocols = 4;
const char* to_string(Protocol p);  // "LL", "LL128", "direct", "planned"

// Per collective, the largest size S (nccl-tests' size: allgather's output, reduce-scatter's input) each protocol
// takes; 0: never. A call takes the first protocol whose limit holds its size: LL128 only above LL's limit, direct
// only above both.
struct ProtocolLimits {
  std::int64_t ll_bytes = 0;
  std::int64_t ll128_bytes = 0;
  std::int64_t direct_bytes = 0;
  bool operator==(const ProtocolLimits&) const = default;
};

// The protocol `limits` give a call of size S `bytes`.
Protocol protocol_at(const ProtocolLimits& limits, std::uint64_t bytes);

// Measured times per size, ascending: us[i][p] is protocol p's time at sizes[i] (unset: it cannot run that size on
// this machine), and incumbent[i] the protocol the runtime takes untuned at sizes[i] (it must have a time).
struct ProtocolTimes {
  std::vector<std::uint64_t> sizes;
  std::vector<std::array<std::optional<double>, kProtocols>> us;
  std::vector<Protocol> incumbent;
};

struct ProtocolChoice {
  ProtocolLimits limits;
  std::vector<Protocol> picked;  // per size, what `limits` give it
  // Summed over sizes, each size's time with its protocol over the fastest there (1 per size at best).
  double cost = 0;
  double incumbent_cost = 0;
  int moved = 0;         // sizes whose protocol differs from the untuned choice's
  bool changed = false;  // false: keep the untuned choice (limits are then the best split, for the record)
};

// The limits whose protocol per size costs least (a split of the sizes into four runs, one per protocol in order;
// the limit of each is the largest size of its run). The untuned choice is kept unless the best saves more than
// `gain` per size it moves to another protocol (relative times: 0.05 is 5% of each such size's time, on average), so
// a few percent of noise at many sizes never moves a limit. Throws canopy::Error when the table is malformed: sizes
// not ascending, rows missing, an incumbent without a time.
ProtocolChoice choose_protocol_limits(const ProtocolTimes& times, double gain = 0.05);

// "LL to 256K, LL128 to 2M, direct to 32M" (a protocol that takes no size is left out; "planned only" for none).
std::string describe(const ProtocolLimits& limits);

}  // namespace canopy
