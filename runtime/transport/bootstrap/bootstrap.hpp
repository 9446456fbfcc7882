// Bootstrap: one rank's membership of a bootstrap group, the first thing the processes of a multi-process
// communicator do (as NCCL's bootstrap). Every rank joins with the UniqueId one process made (make_unique_id,
// unique_id.hpp) and a payload (its host and devices); join returns once every rank has, with everyone's payload in
// rank order. Then allgather rounds and barriers over the same root. All calls block, each bounded by the timeout
// (BootstrapOptions, CANOPY_BOOTSTRAP_TIMEOUT_S); errors are Status values naming the root, the rank at fault and the
// fix. Not thread-safe: one thread uses a Bootstrap. Destroying it leaves the group.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "runtime/transport/bootstrap/bootstrap_options.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy {

class Bootstrap {
 public:
  // Connects to the root named by `id` (trying again until the timeout: the root may start later), says HELLO as
  // `rank` of `nranks` with `payload` (at most 1 MiB less 1 KiB), and waits for every rank. Errors: invalid_argument for bad
  // arguments or a malformed id or variable; remote_error when the root cannot be reached, answers garbage, sends
  // its ERROR (the group failed: its text says why), or does not answer within the timeout.
  static Status join(const UniqueId& id, int nranks, int rank, std::string payload, std::unique_ptr<Bootstrap>* out,
                     const BootstrapOptions& options = {});
  ~Bootstrap();
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  int rank() const;
  int nranks() const;
  const std::vector<std::string>& payloads() const;  // every rank's join payload, in rank order

  // Every rank's `mine` of this round, in rank order, once every rank has called allgather (at most 64 MiB in all
  // less a little framing).
  // After an error the group is gone: every later call returns that error.
  Status allgather(std::string mine, std::vector<std::string>* all);
  // Returns once every rank has called barrier (an allgather of nothing).
  Status barrier();
  // Asked every 100 ms while allgather or barrier waits for the root: true ends the wait at once with a remote_error
  // saying it was given up, and the group is gone for this rank, as after any error (a communicator that failed
  // meanwhile passes its failure, so a call blocked here does not wait out the timeout for processes that left).
  void set_give_up(std::function<bool()> give_up);

 private:
  struct Impl;
  explicit Bootstrap(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace canopy
