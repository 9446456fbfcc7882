// The bootstrap root's group: the HELLOs of authenticated connections, WELCOME, allgather rounds, the ERROR broadcast
// and the end (see bootstrap_root.hpp; the rules themselves are RootGroup's, admission is root_admission.cpp).
#include "runtime/transport/bootstrap/bootstrap_root.hpp"

#include <fmt/format.h>

#include "runtime/transport/bootstrap/root_server.hpp"

namespace canopy {

BootstrapRoot::Server::Server(const BootstrapSecret& s, const BootstrapSettings& settings)
    : secret(s),
      logger(settings.logger),
      timeout(settings.timeout),
      auth_timeout(settings.auth_timeout),
      group(seconds_text(settings.timeout)),
      dropped_warnings(io, settings.logger, kWarningsPerInterval, kWarningInterval,
                       [this](int count, const std::string& last) {
                         return fmt::format("{}: dropped {} more connections in the last {} (at most {} are logged "
                                            "one by one an interval); the last: {}",
                                            name, count, seconds_text(kWarningInterval), kWarningsPerInterval, last);
                       }),
      accept_warnings(io, settings.logger, kWarningsPerInterval, kWarningInterval,
                      [this](int count, const std::string& last) {
                        return fmt::format("{}: accept failed {} more times in the last {}; the last: {}", name,
                                           count, seconds_text(kWarningInterval), last);
                      }) {}

void BootstrapRoot::Server::warn_dropped(const ConnectionPtr& conn, const std::string& why) {
  logger.warn(LogSubsys::init, fmt::format("{}: dropped a connection from {}: {}", name, conn->peer, why));
  close(conn);
}

void BootstrapRoot::Server::read_hello(const ConnectionPtr& conn) {
  async_read_frame(conn->socket, kMaxHelloBody, [this, conn](FrameRead r) { on_hello_frame(conn, std::move(r)); });
}

// The first frame after the AUTH: the peer holds the secret, so what goes wrong is always logged.
void BootstrapRoot::Server::on_hello_frame(const ConnectionPtr& conn, FrameRead read) {
  if (stopped || read.io_error == asio::error::operation_aborted) return;
  if (read.io_error)
    return warn_dropped(conn, fmt::format("it authenticated, then closed before sending a HELLO ({})",
                                          read.io_error.message()));
  if (!read.malformed.ok())
    return warn_dropped(conn, "its message after the AUTH is not a HELLO: " + read.malformed.message());
  if (read.frame.type != MessageType::hello)
    return warn_dropped(conn, fmt::format("its message after the AUTH is a {}, not a HELLO",
                                          to_string(read.frame.type)));
  Hello hello;
  if (Status s = decode_body(read.frame.body, &hello); !s.ok()) return warn_dropped(conn, s.message());
  on_hello(conn, hello);
}

void BootstrapRoot::Server::on_hello(const ConnectionPtr& conn, const Hello& hello) {
  conn->rank = static_cast<int>(hello.rank);
  if (!failure.empty()) {
    tell_failure(conn);
    if (everyone_told()) finish();
    return;
  }
  if (group.formed())
    return warn_dropped(conn, fmt::format("refused its HELLO as rank {}: the group has formed (a replayed message, or "
                                          "a rank started twice)",
                                          hello.rank));
  const bool first = !group.anyone_joined();
  if (Status s = group.join(conn->id, conn->peer, hello); !s.ok()) return fail(s.message());
  logger.info(LogSubsys::init, fmt::format("{}: rank {} of {} joined from {}", name, hello.rank, hello.nranks,
                                           conn->peer));
  if (first) arm(join_timer, Awaited::hellos);  // the others have `timeout` from the first rank's HELLO
  if (group.formed()) {
    join_timer.cancel();
    stop_listening("the group has formed");  // before WELCOME: a rank that has it finds the listener closed
    const std::string welcome = encode_frame(group.welcome());
    for (const auto& [id, c] : connections)
      if (group.rank_of(id)) send(c, welcome);
    logger.info(LogSubsys::init, fmt::format("{}: all {} ranks joined", name, hello.nranks));
  }
  read_next(conn);
}

void BootstrapRoot::Server::read_next(const ConnectionPtr& conn) {
  async_read_frame(conn->socket, kMaxFrameBody, [this, conn](FrameRead r) { on_frame(conn, std::move(r)); });
}

void BootstrapRoot::Server::on_frame(const ConnectionPtr& conn, FrameRead read) {
  if (stopped || !failure.empty() || read.io_error == asio::error::operation_aborted) return;
  if (read.io_error) {  // the rank left (or its process ended)
    close(conn);
    if (Status s = group.leave(conn->id); !s.ok()) return fail(s.message());
    if (group.everyone_left()) finish();
    return;
  }
  if (!read.malformed.ok()) return fail(fmt::format("{} sent a {}", who(conn), read.malformed.message()));
  switch (read.frame.type) {
    case MessageType::hello:
      logger.warn(LogSubsys::init, fmt::format("{}: ignored a second HELLO from {}: a rank says HELLO once (a "
                                               "replayed message?)",
                                               name, who(conn)));
      return read_next(conn);
    case MessageType::allgather:
      return on_allgather(conn, read.frame);
    default:
      return fail(fmt::format("{} sent a {}, which only the root sends", who(conn), to_string(read.frame.type)));
  }
}

void BootstrapRoot::Server::on_allgather(const ConnectionPtr& conn, const Frame& frame) {
  Allgather part;
  if (Status s = decode_body(frame.body, &part); !s.ok()) return fail(fmt::format("{} sent a {}", who(conn), s.message()));
  if (!group.formed()) return fail(fmt::format("{} sent an ALLGATHER before the group formed", who(conn)));
  bool done = false;
  if (Status s = group.contribute(conn->id, part, &done); !s.ok()) return fail(s.message());
  if (done) {
    round_timer.cancel();
    const std::string result = encode_frame(group.take_result());
    for (const auto& [id, c] : connections)
      if (group.rank_of(id)) send(c, result);
  } else if (group.parts_in_round() == 1) {
    arm(round_timer, Awaited::round_parts);
  }
  read_next(conn);
}

void BootstrapRoot::Server::send(const ConnectionPtr& conn, std::string frame) {
  conn->outbox.push_back(std::move(frame));
  if (conn->outbox.size() == 1) write_front(conn);
}

void BootstrapRoot::Server::write_front(const ConnectionPtr& conn) {
  asio::async_write(conn->socket, asio::buffer(conn->outbox.front()),
                    [this, conn](const boost::system::error_code& ec, std::size_t) {
    conn->outbox.pop_front();
    if (ec && conn->close_when_sent) return close(conn);  // it was being told why it goes; it has gone
    if (ec) return;  // the reader sees the connection end and acts on it
    if (!conn->outbox.empty()) return write_front(conn);
    if (conn->close_when_sent) close(conn);
  });
}

void BootstrapRoot::Server::close(const ConnectionPtr& connection) {
  const ConnectionPtr conn = connection;  // `connection` may be the map's own pointer, which the erase below ends
  boost::system::error_code ignored;
  conn->auth_deadline.cancel();
  conn->socket.shutdown(tcp::socket::shutdown_both, ignored);
  conn->socket.close(ignored);
  connections.erase(conn->id);
  unauthenticated.erase(conn->id);
}

void BootstrapRoot::Server::fail(const std::string& why) {
  if (stopped || !failure.empty()) return;
  logger.warn(LogSubsys::init, fmt::format("{}: the group failed: {}", name, why));
  failure = why;
  round_timer.cancel();
  arm(join_timer, Awaited::hellos);  // ranks that come later are told too, for `timeout`
  for (const auto& [id, conn] : std::map(connections))
    if (conn->rank >= 0) tell_failure(conn);
  if (group.nranks() == 0 || everyone_told()) finish();  // no HELLO was taken, or every rank knows
}

void BootstrapRoot::Server::tell_failure(const ConnectionPtr& conn) {
  conn->close_when_sent = true;
  send(conn, encode_frame(ErrorMessage{failure}));
  told.insert(conn->rank);
}

void BootstrapRoot::Server::finish() {
  if (stopped) return;
  stop_listening("the root ends");
  stopped = true;
  join_timer.cancel();
  round_timer.cancel();
  for (const auto& conn : std::map(connections))
    if (conn.second->outbox.empty()) close(conn.second);  // the others close once their ERROR is sent
  logger.debug(LogSubsys::init, fmt::format("{}: closing", name));
}

void BootstrapRoot::Server::arm(asio::steady_timer& timer, Awaited awaited) {
  timer.expires_after(timeout);
  timer.async_wait([this, awaited](const boost::system::error_code& ec) {
    if (ec || stopped) return;
    if (!failure.empty()) return finish();  // the failure has been told long enough
    fail(awaited == Awaited::round_parts ? group.round_timeout_message() : group.join_timeout_message());
  });
}

Status BootstrapRoot::start(const SocketAddress& address, const BootstrapSecret& secret,
                            const BootstrapSettings& settings, std::unique_ptr<BootstrapRoot>* out) {
  std::unique_ptr<BootstrapRoot> root(new BootstrapRoot);
  root->server_ = std::make_unique<Server>(secret, settings);
  Server& server = *root->server_;
  const tcp::endpoint endpoint = to_endpoint(address);
  boost::system::error_code ec;
  server.acceptor.open(endpoint.protocol(), ec);
  if (!ec) server.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) server.acceptor.bind(endpoint, ec);
  if (!ec) server.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) root->address_ = from_endpoint(server.acceptor.local_endpoint(ec));
  if (ec)
    return Status(StatusCode::invalid_argument,
                  fmt::format("bootstrap root: cannot listen on {}: {}: set CANOPY_BOOTSTRAP_ADDR to an address of "
                              "this host (ADDRESS or ADDRESS:PORT, a free port) or CANOPY_SOCKET_IFNAME to an "
                              "interface",
                              to_string(address), ec.message()));
  server.name = "bootstrap root " + to_string(root->address_);
  server.accept();
  server.arm(server.join_timer, Awaited::hellos);  // a root nobody joins ends after `timeout`
  root->thread_ = std::thread([&server] {
    for (bool running = true; running;) {
      try {
        server.io.run();
        running = false;
      } catch (const std::exception& e) {  // a handler threw (out of memory, a log sink): keep serving the others
        server.logger.warn(LogSubsys::init, fmt::format("{}: {}", server.name, e.what()));
      }
    }
    std::lock_guard lock(server.mutex);
    server.finished = true;
    server.finished_changed.notify_all();
  });
  *out = std::move(root);
  return {};
}

bool BootstrapRoot::wait_finished(std::chrono::milliseconds wait) {
  std::unique_lock lock(server_->mutex);
  return server_->finished_changed.wait_for(lock, wait, [&] { return server_->finished; });
}

BootstrapRoot::~BootstrapRoot() {
  if (server_) server_->io.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace canopy
