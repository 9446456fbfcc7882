// RootChannel: one rank's connection to its bootstrap root, in blocking calls that each end by a deadline (asio
// operations run until they complete or the deadline passes, then are cancelled). Errors name the root's address
// and, for deadlines, the timeout and its variable. Private to this folder; Bootstrap speaks the protocol over it.
// receive takes a frame of up to kMaxFrameBody (64 MiB) from the root, allocating what its header names: the root is
// the one the unique id names, reached after this rank sent it the secret, so a rank trusts it that far.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "runtime/transport/bootstrap/asio_frames.hpp"

namespace canopy {

using Deadline = std::chrono::steady_clock::time_point;

class RootChannel {
 public:
  // `timeout_text` ("120 s") is the timeout the deadlines come from, for messages.
  RootChannel(const SocketAddress& root, std::string timeout_text);

  // Connects, trying again while the root refuses or cannot be reached (it may not listen yet) until `deadline`.
  Status connect(Deadline deadline);
  // `if_closed` says what a connection the root closed (or reset) may mean.
  Status send(const std::string& frame, Deadline deadline, const std::string& if_closed = "");
  // One frame; `waiting_for` ("its WELCOME") says in errors what was expected, `if_closed` what a closed
  // connection may mean.
  Status receive(Frame* out, Deadline deadline, const std::string& waiting_for, const std::string& if_closed = "");
  void close();
  const std::string& root_text() const { return root_text_; }
  // Asked every 100 ms while a send or receive waits: true ends the wait at once, as its deadline would, and the
  // call's error then says the wait was given up (Bootstrap::set_give_up). Empty: the waits end at their deadlines.
  void set_give_up(std::function<bool()> give_up) { give_up_ = std::move(give_up); }

 private:
  // Runs the io_context until `done`, `deadline`, or give_up_ says so; then closes the socket (cancelling what waits
  // on it) and returns false (gave_up_ says which ended it).
  bool run(const bool& done, Deadline deadline);
  // " (given up: ...)" after a wait that give_up_ ended, else "".
  std::string given_up_text() const;

  asio::io_context io_;
  tcp::socket socket_{io_};
  tcp::endpoint root_;
  std::string root_text_;
  std::string timeout_text_;
  std::function<bool()> give_up_;
  bool gave_up_ = false;  // the last run() ended because give_up_ said so
};

}  // namespace canopy
