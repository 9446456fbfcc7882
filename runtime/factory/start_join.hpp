// start_join: the start of Communicator::join, the same whichever way the communicator will run (JoinStart,
// comm/join_start.hpp): this process's GPU, the topology given (if any) and the configuration, what the process says
// of itself (its host, pid, ranks, GPU and the key of what plans and kernels depend on), the bootstrap group joined
// with every process's facts decoded and checked alike. The factory then picks the way of running from those facts.
#pragma once

#include "core/logger.hpp"
#include "core/status.hpp"
#include "runtime/comm/communicator_options.hpp"
#include "runtime/comm/join_start.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy {

// Throws canopy::Error where the options or the environment are out of range.
Status start_join(const UniqueId& id, const UniqueIdContents& contents, int nranks, int rank, int own_ranks,
                  const CommunicatorOptions& options, const Logger& log, JoinStart* out);

}  // namespace canopy
