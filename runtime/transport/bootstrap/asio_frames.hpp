// The bootstrap's sockets in Boost.Asio terms, shared by the root and the client (private to this folder; the public
// headers speak in SocketAddress and Status): SocketAddress <-> tcp::endpoint, and reading one whole frame.
#pragma once

#include <utility>  // first: Boost 1.74's asio/awaitable.hpp uses std::exchange without including it

#include <boost/asio.hpp>

#include <cstdint>
#include <functional>

#include "core/status.hpp"
#include "runtime/transport/bootstrap/frame.hpp"
#include "runtime/transport/bootstrap/socket_address.hpp"

namespace canopy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

tcp::endpoint to_endpoint(const SocketAddress& address);
SocketAddress from_endpoint(const tcp::endpoint& endpoint);

struct FrameRead {
  boost::system::error_code io_error;  // the connection failed or closed (asio::error::eof)
  Status malformed;                    // the bytes that came are not a frame of at most max_body bytes
  Frame frame;
};

// Reads a header, then its body (at most `max_body` bytes, allocated as the header names), and calls `done` once with
// the frame or what went wrong. The root calls it only on connections that have authenticated: a connection's first
// message, the AUTH, it reads into a fixed buffer (root_admission.cpp).
void async_read_frame(tcp::socket& socket, std::uint32_t max_body, std::function<void(FrameRead)> done);

}  // namespace canopy
