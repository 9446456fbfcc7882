// BootstrapRoot: the rendezvous the ranks of one bootstrap connect to: a thread running an asio io_context that
// accepts connections and admits those whose first message, a fixed-size AUTH read into a fixed buffer, carries the
// secret within the auth deadline (root_admission.cpp: nothing is allocated from a stranger's length field, at most
// kMaxUnauthenticatedConnections wait at once, accept backs off when it fails, each drop is a rate-limited warning
// and nothing is told to the peer). Then it applies RootGroup's rules to the HELLOs, stops listening and sends WELCOME
// once every rank joined, serves allgather rounds, and sends ERROR to every rank when the group fails or times out
// (bootstrap_root.cpp). make_unique_id starts one and keeps it in the process-wide registry (root_registry.cpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <thread>

#include "core/status.hpp"
#include "runtime/transport/bootstrap/bootstrap_options.hpp"
#include "runtime/transport/bootstrap/socket_address.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy {

// The root's limits on connections that have not authenticated (docs/multi-process.md, "What a stranger on the
// network can and cannot do"). The deadline is BootstrapSettings::auth_timeout (CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S).
constexpr std::size_t kMaxUnauthenticatedConnections = 64;  // at the cap a new one replaces the oldest
constexpr std::chrono::milliseconds kFirstAcceptRetry(50);   // when accept fails (out of descriptors, ...): the first
constexpr std::chrono::milliseconds kLastAcceptRetry(1000);  // wait before trying again, doubling up to the last
constexpr int kWarningsPerInterval = 10;                     // dropped connections (and failed accepts) logged one
constexpr std::chrono::milliseconds kWarningInterval(10000); // line each, then summed up in one line an interval

class BootstrapRoot {
 public:
  // Listens on `address` (port 0: the OS picks one) and starts the thread; an error when it cannot listen there.
  static Status start(const SocketAddress& address, const BootstrapSecret& secret, const BootstrapSettings& settings,
                      std::unique_ptr<BootstrapRoot>* out);
  ~BootstrapRoot();  // stops the thread if it still runs
  BootstrapRoot(const BootstrapRoot&) = delete;
  BootstrapRoot& operator=(const BootstrapRoot&) = delete;

  // Where it listens (until the group forms), with the port the OS chose.
  const SocketAddress& address() const { return address_; }
  // Waits up to `wait` for the thread to end by itself (the group formed and every rank left, or it failed).
  bool wait_finished(std::chrono::milliseconds wait);

  struct Server;  // the io_context and everything its handlers touch (root_server.hpp)

 private:
  BootstrapRoot() = default;
  std::unique_ptr<Server> server_;
  SocketAddress address_;
  std::thread thread_;
};

}  // namespace canopy
