// The five collectives Canopy plans, with nccl-tests' conventions for sizes and bus bandwidth.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace canopy {

// All-to-all is planned apart (planner/alltoall.hpp: routes, not trees; algbw N·λ, busbw (N−1)·λ as nccl-tests'
// alltoall_perf) and is not a Collective: the runtime does not run planned all-to-alls yet.
enum class Collective { broadcast, reduce, allreduce, allgather, reducescatter };

std::string to_string(Collective c);
std::optional<Collective> parse_collective(std::string_view name);  // "broadcast", ..., also "reduce-scatter"

// nccl-tests busbw factor: busbw = algbw x factor (2(n-1)/n allreduce, (n-1)/n allgather/reduce-scatter, 1 else).
double busbw_factor(Collective c, int ranks);

// Broadcast and reduce have a root; the others do not.
bool has_root(Collective c);

// Reduce, allreduce and reduce-scatter combine inputs with an operator; broadcast and allgather only copy.
bool reduces(Collective c);

}  // namespace canopy
