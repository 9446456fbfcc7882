// A rank's blocking, deadline-bounded calls to its bootstrap root (see root_channel.hpp).
#include "runtime/transport/bootstrap/root_channel.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace canopy {

RootChannel::RootChannel(const SocketAddress& root, std::string timeout_text)
    : root_(to_endpoint(root)), root_text_(to_string(root)), timeout_text_(std::move(timeout_text)) {}

bool RootChannel::run(const bool& done, Deadline deadline) {
  constexpr std::chrono::milliseconds kGiveUpPoll(100);
  gave_up_ = false;
  io_.restart();
  while (!done) {
    const Deadline now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    if (give_up_ && give_up_()) {
      gave_up_ = true;
      break;
    }
    const Deadline until = give_up_ ? std::min(deadline, now + kGiveUpPoll) : deadline;
    if (io_.run_one_until(until) == 0 && io_.stopped()) break;  // nothing left to run
  }
  if (done) return true;
  close();  // what waits on the socket ends with operation_aborted
  io_.restart();
  io_.run();
  return false;
}

std::string RootChannel::given_up_text() const {
  return gave_up_ ? " (given up before then: this rank's communicator failed meanwhile)" : "";
}

Status RootChannel::connect(Deadline deadline) {
  auto backoff = std::chrono::milliseconds(10);
  boost::system::error_code last;  // why the last attempt that ended failed
  while (std::chrono::steady_clock::now() < deadline) {
    bool done = false;
    boost::system::error_code error;
    socket_.async_connect(root_, [&](const boost::system::error_code& ec) { error = ec, done = true; });
    if (!run(done, deadline)) break;
    if (!error) return {};
    last = error;
    close();
    asio::steady_timer pause(io_, std::min<Deadline>(std::chrono::steady_clock::now() + backoff, deadline));
    bool waited = false;  // then try again
    pause.async_wait([&](const boost::system::error_code&) { waited = true; });
    run(waited, Deadline::max());
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
  if (!last) last = asio::error::timed_out;
  return Status(StatusCode::remote_error,
                fmt::format("cannot reach the bootstrap root at {} within {}: {} (is the process that made the unique "
                            "id still running, and does it listen on an address this host can reach? see "
                            "CANOPY_BOOTSTRAP_ADDR and CANOPY_SOCKET_IFNAME)",
                            root_text_, timeout_text_, last.message()));
}

Status RootChannel::send(const std::string& frame, Deadline deadline, const std::string& if_closed) {
  bool done = false;
  boost::system::error_code error;
  asio::async_write(socket_, asio::buffer(frame), [&](const boost::system::error_code& ec, std::size_t) {
    error = ec, done = true;
  });
  if (!run(done, deadline))
    return Status(StatusCode::remote_error, fmt::format("could not send to the bootstrap root at {} within {} "
                                                        "(CANOPY_BOOTSTRAP_TIMEOUT_S){}",
                                                        root_text_, timeout_text_, given_up_text()));
  if (error == asio::error::connection_reset || error == asio::error::broken_pipe)
    return Status(StatusCode::remote_error, fmt::format("the bootstrap root at {} closed the connection while this "
                                                        "rank sent to it{}",
                                                        root_text_, if_closed));
  if (error)
    return Status(StatusCode::remote_error,
                  fmt::format("lost the connection to the bootstrap root at {}: {}", root_text_, error.message()));
  return {};
}

Status RootChannel::receive(Frame* out, Deadline deadline, const std::string& waiting_for,
                            const std::string& if_closed) {
  bool done = false;
  FrameRead read;
  async_read_frame(socket_, kMaxFrameBody, [&](FrameRead r) { read = std::move(r), done = true; });
  if (!run(done, deadline)) {
    if (gave_up_)
      return Status(StatusCode::remote_error, fmt::format("stopped waiting for {} from the bootstrap root at {}: this "
                                                          "rank's communicator failed meanwhile",
                                                          waiting_for, root_text_));
    return Status(StatusCode::remote_error, fmt::format("no answer from the bootstrap root at {} within {} while "
                                                        "waiting for {} (CANOPY_BOOTSTRAP_TIMEOUT_S)",
                                                        root_text_, timeout_text_, waiting_for));
  }
  if (read.io_error == asio::error::eof || read.io_error == asio::error::connection_reset)
    return Status(StatusCode::remote_error, fmt::format("the bootstrap root at {} closed the connection while this "
                                                        "rank waited for {}{}",
                                                        root_text_, waiting_for, if_closed));
  if (read.io_error)
    return Status(StatusCode::remote_error, fmt::format("lost the connection to the bootstrap root at {} while "
                                                        "waiting for {}: {}",
                                                        root_text_, waiting_for, read.io_error.message()));
  if (!read.malformed.ok())
    return Status(StatusCode::remote_error, fmt::format("the bootstrap root at {} answered with a {}", root_text_,
                                                        read.malformed.message()));
  *out = std::move(read.frame);
  return {};
}

void RootChannel::close() {
  boost::system::error_code ignored;
  socket_.close(ignored);
}

}  // namespace canopy
