// BootstrapRoot's server: the io_context and everything its handlers touch, shared by root_admission.cpp (the
// listener and the connections that have not authenticated yet) and bootstrap_root.cpp (the group: HELLOs, allgather
// rounds, failure, the end). Private to this folder. Everything here is used on the root's one thread, except
// `mutex`, `finished` and `finished_changed`, which the registry's thread reads.
#pragma once

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "runtime/transport/bootstrap/asio_frames.hpp"
#include "runtime/transport/bootstrap/bootstrap_root.hpp"
#include "runtime/transport/bootstrap/rate_limited_warnings.hpp"
#include "runtime/transport/bootstrap/root_group.hpp"

namespace canopy {

struct RootConnection {
  RootConnection(tcp::socket s, int connection_id, asio::io_context& io);
  tcp::socket socket;
  int id;  // ids grow: a lower id is an older connection
  std::string peer;
  std::chrono::steady_clock::time_point accepted_at;
  // Until it authenticates: its first kAuthFrameBytes land here and nowhere else, by `auth_deadline`.
  bool authenticated = false;
  std::array<char, kAuthFrameBytes> first{};
  std::size_t first_bytes = 0;  // how many have come
  asio::steady_timer auth_deadline;
  int rank = -1;  // the rank its HELLO claimed: it is told why the group failed
  std::deque<std::string> outbox;
  bool close_when_sent = false;
};
using ConnectionPtr = std::shared_ptr<RootConnection>;

// What a timer waits for: every rank's HELLO, or every rank's part of an allgather round.
enum class Awaited { hellos, round_parts };

struct BootstrapRoot::Server {
  Server(const BootstrapSecret& s, const BootstrapSettings& settings);

  // Admission (root_admission.cpp).
  void accept();
  void accept_later(const boost::system::error_code& why);  // after accept failed: backs off
  void admit(tcp::socket socket);
  void on_auth(const ConnectionPtr& conn, const boost::system::error_code& ec, std::size_t bytes);
  void drop_stranger(const ConnectionPtr& conn, const std::string& why);  // a rate-limited warning, then close
  std::string age(const ConnectionPtr& conn) const;                       // "open 1.2 s"
  // Closes the listener and drops every connection that has not authenticated (the group formed, or the root ends).
  void stop_listening(const std::string& why);

  // The group (bootstrap_root.cpp).
  void read_hello(const ConnectionPtr& conn);
  void on_hello_frame(const ConnectionPtr& conn, FrameRead read);
  void on_hello(const ConnectionPtr& conn, const Hello& hello);
  void read_next(const ConnectionPtr& conn);
  void on_frame(const ConnectionPtr& conn, FrameRead read);
  void on_allgather(const ConnectionPtr& conn, const Frame& frame);
  void tell_failure(const ConnectionPtr& conn);
  bool everyone_told() const { return static_cast<int>(told.size()) >= group.nranks(); }
  void send(const ConnectionPtr& conn, std::string frame);
  void write_front(const ConnectionPtr& conn);
  void close(const ConnectionPtr& conn);
  void fail(const std::string& why);
  void finish();
  // When `timer` fires before what it awaits came, the group fails (or, once failed, the root ends).
  void arm(asio::steady_timer& timer, Awaited awaited);
  void warn_dropped(const ConnectionPtr& conn, const std::string& why);  // an authenticated one: always logged
  std::string who(const ConnectionPtr& conn) const {
    return fmt::format("rank {} (at {})", group.rank_of(conn->id).value_or(-1), conn->peer);
  }

  asio::io_context io;
  tcp::acceptor acceptor{io};
  bool listening = true;
  asio::steady_timer accept_retry{io};
  std::chrono::milliseconds accept_backoff = kFirstAcceptRetry;
  asio::steady_timer join_timer{io}, round_timer{io};
  BootstrapSecret secret;
  Logger logger;
  std::chrono::milliseconds timeout, auth_timeout;
  std::string name;  // "bootstrap root 10.0.0.1:4711", the start of every log line
  RootGroup group;
  std::map<int, ConnectionPtr> connections;  // every open one, by id
  std::set<int> unauthenticated;             // the ids of those that have not authenticated, oldest first
  int next_id = 0;
  RateLimitedWarnings dropped_warnings, accept_warnings;
  std::string failure;   // why the group failed; then the root tells every rank that says HELLO, for `timeout`
  std::set<int> told;    // the ranks it told
  bool stopped = false;  // finished: events that still arrive are ignored

  std::mutex mutex;  // guards `finished`
  std::condition_variable finished_changed;
  bool finished = false;
};

}  // namespace canopy
