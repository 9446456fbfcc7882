// The bootstrap root's admission of connections (see bootstrap_root.hpp, root_server.hpp): the accept loop, which
// backs off when accept fails instead of trying again at once; the cap on connections that have not authenticated
// (at the cap, and when accept runs out of descriptors, the oldest of them is dropped); each one's AUTH, read into a
// fixed buffer by its deadline and compared with the secret in constant time; and the listener's end. A stranger's
// connection costs the root one RootConnection and one descriptor, for at most the auth deadline.
#include <fmt/format.h>
#include <openssl/crypto.h>

#include <cerrno>

#include "runtime/transport/bootstrap/root_server.hpp"

namespace canopy {

namespace {
// accept failed for want of something this process or the host has run out of (a descriptor, buffers, memory),
// not because of the connection it would have taken.
bool out_of_resources(const boost::system::error_code& ec) {
  return ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space || ec == asio::error::no_memory ||
         ec == boost::system::error_code(ENFILE, boost::system::system_category());
}
}  // namespace

RootConnection::RootConnection(tcp::socket s, int connection_id, asio::io_context& io)
    : socket(std::move(s)), id(connection_id), accepted_at(std::chrono::steady_clock::now()), auth_deadline(io) {
  boost::system::error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  peer = ec ? "an unknown peer" : to_string(from_endpoint(remote));
}

std::string BootstrapRoot::Server::age(const ConnectionPtr& conn) const {
  return "open " + seconds_text(std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - conn->accepted_at));
}

void BootstrapRoot::Server::accept() {
  if (stopped || !listening) return;
  acceptor.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (stopped || !listening || ec == asio::error::operation_aborted) return;
    if (ec) return accept_later(ec);
    accept_backoff = kFirstAcceptRetry;
    admit(std::move(socket));
    accept();
  });
}

// Trying again at once would spin while the cause lasts (the listener stays readable), so wait: 50 ms, doubling to
// 1 s while accept keeps failing. Out of descriptors (or buffers, or memory), the oldest connection that has not
// authenticated gives its descriptor up to the connection that has waited longest in the host's queue, where a rank
// may be.
void BootstrapRoot::Server::accept_later(const boost::system::error_code& why) {
  std::string freed;
  if (out_of_resources(why) && !unauthenticated.empty()) {
    const ConnectionPtr oldest = connections.at(*unauthenticated.begin());
    freed = fmt::format("; dropped the oldest connection that has not authenticated (from {}, {}) to free its "
                        "descriptor",
                        oldest->peer, age(oldest));
    close(oldest);
  }
  accept_warnings.warn(fmt::format("{}: accept failed: {}{}; trying again in {}{}", name, why.message(), freed,
                                   seconds_text(accept_backoff),
                                   why == asio::error::no_descriptors ? " (if this process needs more descriptors "
                                                                        "than its limit, raise it: ulimit -n)"
                                                                      : ""));
  accept_retry.expires_after(accept_backoff);
  accept_retry.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) accept();
  });
  accept_backoff = std::min(accept_backoff * 2, kLastAcceptRetry);
}

void BootstrapRoot::Server::admit(tcp::socket socket) {
  if (unauthenticated.size() >= kMaxUnauthenticatedConnections) {
    const ConnectionPtr oldest = connections.at(*unauthenticated.begin());
    drop_stranger(oldest, fmt::format("it had not authenticated ({}), and {} such connections are the most the root "
                                      "keeps: the oldest makes room",
                                      age(oldest), kMaxUnauthenticatedConnections));
  }
  auto conn = std::make_shared<RootConnection>(std::move(socket), next_id++, io);
  connections[conn->id] = conn;
  unauthenticated.insert(conn->id);
  conn->auth_deadline.expires_after(auth_timeout);
  conn->auth_deadline.async_wait([this, conn](const boost::system::error_code& ec) {
    if (ec || stopped || conn->authenticated || !connections.count(conn->id)) return;
    drop_stranger(conn, fmt::format("it sent {} of the {} bytes of its AUTH within {} "
                                    "(CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S)",
                                    conn->first_bytes, kAuthFrameBytes, seconds_text(auth_timeout)));
  });
  // The AUTH, into the connection's fixed buffer: the read stops as soon as its first 12 bytes are no AUTH header.
  asio::async_read(
      conn->socket, asio::buffer(conn->first),
      [conn](const boost::system::error_code& ec, std::size_t bytes) -> std::size_t {
        conn->first_bytes = bytes;
        if (ec) return 0;
        if (bytes >= kFrameHeaderBytes && !check_auth_header({conn->first.data(), kFrameHeaderBytes}).ok()) return 0;
        return kAuthFrameBytes - bytes;
      },
      [this, conn](const boost::system::error_code& ec, std::size_t bytes) { on_auth(conn, ec, bytes); });
}

void BootstrapRoot::Server::on_auth(const ConnectionPtr& conn, const boost::system::error_code& ec,
                                    std::size_t bytes) {
  if (stopped || ec == asio::error::operation_aborted || !connections.count(conn->id)) return;
  const std::string_view first(conn->first.data(), bytes);
  if (bytes >= kFrameHeaderBytes) {
    const std::string_view header = first.substr(0, kFrameHeaderBytes);
    if (Status s = check_auth_header(header); !s.ok()) {
      if (!is_other_protocol_version(header))
        return drop_stranger(conn, "its first message is no AUTH: " + s.message());
      // A Canopy of another release: tell it, in our version's frame, which its own check names (then close).
      dropped_warnings.warn(fmt::format("{}: dropped a connection from {}: {} (it was told so)", name, conn->peer,
                                        s.message()));
      conn->close_when_sent = true;
      send(conn, encode_frame(ErrorMessage{fmt::format("{} refused the connection: {}", name, s.message())}));
      return;
    }
  }
  if (bytes < kAuthFrameBytes)
    return drop_stranger(conn, fmt::format("it closed after {} of the {} bytes of its AUTH ({})", bytes,
                                           kAuthFrameBytes, ec.message()));
  Auth auth;
  if (Status s = decode_auth_frame(first, &auth); !s.ok()) return drop_stranger(conn, s.message());
  if (CRYPTO_memcmp(auth.secret.data(), secret.data(), secret.size()) != 0)
    return drop_stranger(conn, "its AUTH carries the wrong secret (a unique id from another job, or a stale one)");
  conn->authenticated = true;
  unauthenticated.erase(conn->id);
  conn->auth_deadline.cancel();
  logger.debug(LogSubsys::init, fmt::format("{}: the connection from {} authenticated", name, conn->peer));
  read_hello(conn);
}

void BootstrapRoot::Server::drop_stranger(const ConnectionPtr& conn, const std::string& why) {
  dropped_warnings.warn(fmt::format("{}: dropped a connection from {}: {}", name, conn->peer, why));
  close(conn);
}

void BootstrapRoot::Server::stop_listening(const std::string& why) {
  if (!listening) return;
  listening = false;
  boost::system::error_code ignored;
  acceptor.close(ignored);
  accept_retry.cancel();
  for (const int id : std::set(unauthenticated)) {
    const ConnectionPtr conn = connections.at(id);
    drop_stranger(conn, why + ": the root takes no more connections");
  }
  dropped_warnings.flush();
  accept_warnings.flush();
  logger.info(LogSubsys::init, fmt::format("{}: stopped listening: {}", name, why));
}

}  // namespace canopy
