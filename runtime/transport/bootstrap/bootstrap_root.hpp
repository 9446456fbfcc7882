// BootstrapRoot: the rendezvous the ranks of one bootstrap connect to: a thread running an asio io_context that
// accepts connections, drops any whose first message is not a HELLO carrying the secret (one warning each, nothing
// told to the peer), applies RootGroup's rules to the HELLOs, sends WELCOME once every rank joined, then serves
// allgather rounds, and sends ERROR to every rank when the group fails or times out. make_unique_id starts one and
// keeps it in the process-wide registry (root_registry.cpp).
#pragma once

#include <chrono>
#include <memory>
#include <thread>

#include "core/status.hpp"
#include "runtime/transport/bootstrap/bootstrap_options.hpp"
#include "runtime/transport/bootstrap/socket_address.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy {

class BootstrapRoot {
 public:
  // Listens on `address` (port 0: the OS picks one) and starts the thread; an error when it cannot listen there.
  static Status start(const SocketAddress& address, const BootstrapSecret& secret, const BootstrapSettings& settings,
                      std::unique_ptr<BootstrapRoot>* out);
  ~BootstrapRoot();  // stops the thread if it still runs
  BootstrapRoot(const BootstrapRoot&) = delete;
  BootstrapRoot& operator=(const BootstrapRoot&) = delete;

  // Where it listens, with the port the OS chose.
  const SocketAddress& address() const { return address_; }
  // Waits up to `wait` for the thread to end by itself (the group formed and every rank left, or it failed).
  bool wait_finished(std::chrono::milliseconds wait);

  struct Server;  // the io_context and everything its handlers touch (bootstrap_root.cpp)

 private:
  BootstrapRoot() = default;
  std::unique_ptr<Server> server_;
  SocketAddress address_;
  std::thread thread_;
};

}  // namespace canopy
