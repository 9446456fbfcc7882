// Helpers of the bootstrap tests: a log sink that keeps lines (safe from the root's thread, alive as long as any
// logger holds it, and waited on), ranks joined on threads of this process, and a raw socket that speaks to a root as
// no rank would.
#pragma once

#include <gtest/gtest.h>

#include <utility>  // first: Boost 1.74's asio/awaitable.hpp uses std::exchange without including it

#include <boost/asio.hpp>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/transport/bootstrap/bootstrap.hpp"
#include "runtime/transport/bootstrap/frame.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"
#include "runtime/transport/bootstrap/wire_bytes.hpp"
#include "core/version.hpp"
#include "tests/test_util.hpp"

namespace canopy::testing {

class LogLines : public std::enable_shared_from_this<LogLines> {
 public:
  // A logger at `level` whose lines land here (it keeps this alive).
  Logger logger(LogLevel level = LogLevel::info) {
    Logger logger(level, ~0u);
    logger.set_sink([self = shared_from_this()](std::string_view line) { self->add(line); });
    return logger;
  }
  void add(std::string_view line) {
    std::lock_guard lock(mutex_);
    lines_.emplace_back(line);
    added_.notify_all();
  }
  int count(const std::string& needle) const {
    std::lock_guard lock(mutex_);
    return count_locked(needle);
  }
  // Waits up to `wait` for `n` lines containing `needle`; true when they came.
  bool wait_for(const std::string& needle, int n, std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    return added_.wait_for(lock, wait, [&] { return count_locked(needle) >= n; });
  }
  // The lines containing `needle`.
  std::vector<std::string> matching(const std::string& needle) const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> found;
    for (const std::string& line : lines_)
      if (line.find(needle) != std::string::npos) found.push_back(line);
    return found;
  }
  std::string all() const {
    std::lock_guard lock(mutex_);
    std::string text;
    for (const std::string& line : lines_) text += line + "\n";
    return text;
  }

 private:
  int count_locked(const std::string& needle) const {
    int n = 0;
    for (const std::string& line : lines_) n += line.find(needle) != std::string::npos;
    return n;
  }
  mutable std::mutex mutex_;
  std::condition_variable added_;
  std::vector<std::string> lines_;
};

// A frame header with these fields, then `body` (for frames no rank would send).
inline std::string raw_frame(std::uint32_t magic, std::uint16_t version, std::uint16_t type, std::uint32_t length,
                             const std::string& body = "") {
  WireWriter w;
  w.u32(magic);
  w.u16(version);
  w.u16(type);
  w.u32(length);
  return w.bytes() + body;
}

struct RankSpec {
  int nranks = 0;
  int rank = 0;
  std::string version = CANOPY_VERSION;
};

struct RankOutcome {
  Status join;
  std::vector<std::string> welcome;  // payloads() after join
  Status gather;
  std::vector<std::string> gathered;  // round 0: "gather R"
  Status barrier;
};

// Every spec joins on a thread of its own with payload "hello R", then (when joined) allgathers "gather R" and
// passes a barrier.
inline std::vector<RankOutcome> run_ranks(const UniqueId& id, const std::vector<RankSpec>& specs,
                                          BootstrapOptions options) {
  std::vector<RankOutcome> outcomes(specs.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < specs.size(); ++i)
    threads.emplace_back([&, i, options] {
      BootstrapOptions mine = options;
      mine.version = specs[i].version;
      RankOutcome& o = outcomes[i];
      std::unique_ptr<Bootstrap> b;
      const int rank = specs[i].rank;
      o.join = Bootstrap::join(id, specs[i].nranks, rank, "hello " + std::to_string(rank), &b, mine);
      if (!o.join.ok()) return;
      o.welcome = b->payloads();
      o.gather = b->allgather("gather " + std::to_string(rank), &o.gathered);
      o.barrier = b->barrier();
    });
  for (std::thread& t : threads) t.join();
  return outcomes;
}

// A connection to a root that sends what a test wants and reads what comes back, blocking (the root answers or
// closes; a failure there is what the tests look for).
class RawPeer {
 public:
  explicit RawPeer(const UniqueId& id) : socket_(io_) {
    UniqueIdContents c;
    EXPECT_TRUE(decode_unique_id(id, &c).ok());
    secret_ = c.secret;
    boost::asio::ip::address_v4::bytes_type bytes;
    std::copy_n(c.root.bytes.begin(), 4, bytes.begin());
    socket_.connect({boost::asio::ip::address_v4(bytes), c.root.port});
  }
  const BootstrapSecret& secret() const { return secret_; }
  // The first message a rank sends: the AUTH with this id's secret.
  std::string auth() const { return encode_frame(Auth{secret_}); }
  void send(const std::string& bytes) { boost::asio::write(socket_, boost::asio::buffer(bytes)); }
  // The next frame, or false when the root closed the connection.
  bool receive(Frame* out) {
    std::string header(kFrameHeaderBytes, '\0');
    boost::system::error_code ec;
    boost::asio::read(socket_, boost::asio::buffer(header), ec);
    FrameHeader h;
    if (ec || !decode_frame_header(header, kMaxFrameBody, &h).ok()) return false;
    std::string body(h.body_bytes, '\0');
    boost::asio::read(socket_, boost::asio::buffer(body), ec);
    if (ec) return false;
    *out = {h.type, body};
    return true;
  }
  void close() { socket_.close(); }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  BootstrapSecret secret_{};
};

// Roots on loopback (CANOPY_BOOTSTRAP_ADDR), logging into log_.
class BootstrapTest : public ::testing::Test {
 protected:
  // Options whose waits last `timeout` and whose log lines land in log_; the root's auth deadline `auth_timeout`
  // (unset: CANOPY_BOOTSTRAP_AUTH_TIMEOUT_S, default 5 s).
  BootstrapOptions options(std::chrono::milliseconds timeout,
                           std::optional<std::chrono::milliseconds> auth_timeout = std::nullopt) const {
    BootstrapOptions o;
    o.timeout = timeout;
    o.auth_timeout = auth_timeout;
    o.logger = logger_;
    return o;
  }
  // make_unique_id with options(timeout, auth_timeout).
  UniqueId start_root(std::chrono::milliseconds timeout,
                      std::optional<std::chrono::milliseconds> auth_timeout = std::nullopt) const {
    UniqueId id;
    const Status s = make_unique_id(&id, options(timeout, auth_timeout));
    EXPECT_TRUE(s.ok()) << s.to_string();
    return id;
  }

  ScopedEnv loopback_{"CANOPY_BOOTSTRAP_ADDR", "127.0.0.1"};
  std::shared_ptr<LogLines> log_ = std::make_shared<LogLines>();
  Logger logger_ = log_->logger();
};

}  // namespace canopy::testing
