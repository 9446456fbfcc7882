// SocketAddress <-> asio endpoints and whole-frame reads (see asio_frames.hpp).
#include "runtime/transport/bootstrap/asio_frames.hpp"

#include <array>
#include <cstring>
#include <memory>

namespace canopy {

tcp::endpoint to_endpoint(const SocketAddress& address) {
  if (address.family == 6) {
    asio::ip::address_v6::bytes_type bytes;
    std::memcpy(bytes.data(), address.bytes.data(), bytes.size());
    return {asio::ip::address_v6(bytes, address.scope_id), address.port};
  }
  asio::ip::address_v4::bytes_type bytes;
  std::memcpy(bytes.data(), address.bytes.data(), bytes.size());
  return {asio::ip::address_v4(bytes), address.port};
}

SocketAddress from_endpoint(const tcp::endpoint& endpoint) {
  SocketAddress a;
  a.port = endpoint.port();
  const asio::ip::address ip = endpoint.address();
  if (ip.is_v6() && !ip.to_v6().is_v4_mapped()) {
    a.family = 6;
    const auto bytes = ip.to_v6().to_bytes();
    std::memcpy(a.bytes.data(), bytes.data(), bytes.size());
    a.scope_id = ip.to_v6().scope_id();
    return a;
  }
  const auto bytes = ip.is_v6() ? asio::ip::make_address_v4(asio::ip::v4_mapped, ip.to_v6()).to_bytes()
                                : ip.to_v4().to_bytes();
  std::memcpy(a.bytes.data(), bytes.data(), bytes.size());
  return a;
}

void async_read_frame(tcp::socket& socket, std::uint32_t max_body, std::function<void(FrameRead)> done) {
  struct Reading {
    std::array<char, kFrameHeaderBytes> header;
    FrameRead result;
    std::function<void(FrameRead)> done;
  };
  auto reading = std::make_shared<Reading>();
  reading->done = std::move(done);
  asio::async_read(socket, asio::buffer(reading->header),
                   [&socket, max_body, reading](const boost::system::error_code& ec, std::size_t) {
    FrameRead& r = reading->result;
    FrameHeader header;
    if (ec) r.io_error = ec;
    else r.malformed = decode_frame_header({reading->header.data(), reading->header.size()}, max_body, &header);
    if (ec || !r.malformed.ok()) return reading->done(std::move(r));
    r.frame.type = header.type;
    r.frame.body.resize(header.body_bytes);
    asio::async_read(socket, asio::buffer(r.frame.body), [reading](const boost::system::error_code& ec, std::size_t) {
      reading->result.io_error = ec;
      reading->done(std::move(reading->result));
    });
  });
}

}  // namespace canopy
