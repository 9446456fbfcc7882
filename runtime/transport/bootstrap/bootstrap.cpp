// A rank's side of the bootstrap: AUTH (the secret, in the fixed-size first message the root reads before anything
// else) and HELLO, WELCOME, then allgather rounds (see bootstrap.hpp).
#include "runtime/transport/bootstrap/bootstrap.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "runtime/transport/bootstrap/frame.hpp"
#include "runtime/transport/bootstrap/root_channel.hpp"

namespace canopy {

namespace {
// How much longer than the timeout a rank waits for an answer, so that the root's own timeout, which names the
// missing ranks, reaches it first.
constexpr std::chrono::seconds kAnswerGrace(1);

Status invalid(std::string text) { return Status(StatusCode::invalid_argument, std::move(text)); }
}  // namespace

struct Bootstrap::Impl {
  Impl(const UniqueIdContents& id, BootstrapSettings s, int nranks_, int rank_)
      : settings(std::move(s)), channel(id.root, seconds_text(settings.timeout)), nranks(nranks_), rank(rank_) {}

  // The next frame, which must be `want` (an ERROR becomes the error it carries); decoded into `out`.
  template <class Message>
  Status receive(MessageType want, Message* out, const std::string& waiting_for, const std::string& if_closed = "") {
    Frame frame;
    const Deadline deadline = std::chrono::steady_clock::now() + settings.timeout + kAnswerGrace;
    if (Status s = channel.receive(&frame, deadline, waiting_for, if_closed); !s.ok()) return s;
    if (frame.type == MessageType::error) {
      ErrorMessage error;
      if (Status s = decode_body(frame.body, &error); !s.ok()) return garbage(s.message());
      return Status(StatusCode::remote_error,
                    fmt::format("bootstrap (rank {} of {}): the group failed: {}", rank, nranks, error.text));
    }
    if (frame.type != want)
      return garbage(fmt::format("a {} where {} was expected", to_string(frame.type), waiting_for));
    if (Status s = decode_body(frame.body, out); !s.ok()) return garbage(s.message());
    return {};
  }
  Status garbage(const std::string& what) const {
    return Status(StatusCode::remote_error,
                  fmt::format("the bootstrap root at {} answered with {}", channel.root_text(), what));
  }
  // Every rank's payload, as WELCOME or ALLGATHER_RESULT brought it: one per rank, ours in our place.
  Status check_payloads(const std::vector<std::string>& payloads, const std::string& mine, const char* what) const {
    if (payloads.size() != static_cast<std::size_t>(nranks))
      return garbage(fmt::format("a {} of {} payloads for {} ranks", what, payloads.size(), nranks));
    if (payloads[rank] != mine) return garbage(fmt::format("a {} whose payload of rank {} is not its own", what, rank));
    return {};
  }

  BootstrapSettings settings;
  RootChannel channel;
  int nranks;
  int rank;
  std::vector<std::string> payloads;
  std::uint32_t round = 0;
  Status broken;  // the first error after joining: the group is gone
};

Status Bootstrap::join(const UniqueId& id, int nranks, int rank, std::string payload, std::unique_ptr<Bootstrap>* out,
                       const BootstrapOptions& options) {
  if (!out) return invalid("Bootstrap::join: `out` is null: pass a std::unique_ptr<Bootstrap> to fill");
  if (nranks < 1) return invalid(fmt::format("Bootstrap::join: nranks is {}; a group has at least 1 rank", nranks));
  if (rank < 0 || rank >= nranks)
    return invalid(fmt::format("Bootstrap::join: rank {} is not a rank of {} (0 to {})", rank, nranks, nranks - 1));
  if (payload.size() > kMaxHelloBody - 1024)
    return invalid(fmt::format("Bootstrap::join: the payload is {} bytes, over the {} a HELLO carries: send the rest "
                               "with allgather",
                               payload.size(), kMaxHelloBody - 1024));
  UniqueIdContents contents;
  if (Status s = decode_unique_id(id, &contents); !s.ok()) return s;
  BootstrapSettings settings;
  try {
    settings = settle(options);
  } catch (const Error& e) {
    return invalid(e.what());
  }
  const Deadline connect_by = std::chrono::steady_clock::now() + settings.timeout;
  auto impl = std::make_unique<Impl>(contents, std::move(settings), nranks, rank);
  if (Status s = impl->channel.connect(connect_by); !s.ok()) return s;
  const Hello hello{impl->settings.version, static_cast<std::uint32_t>(nranks), static_cast<std::uint32_t>(rank),
                    payload};
  // The root drops, saying nothing, a connection whose AUTH carries another secret (and a root older than protocol
  // version 2 one that speaks it).
  const std::string if_dropped =
      " (the root drops a connection whose secret is wrong, and a root of an older Canopy one of this protocol "
      "version: is this unique id the one this job's root made, is that root still running, and does it run this "
      "Canopy?)";
  if (Status s = impl->channel.send(encode_frame(Auth{contents.secret}) + encode_frame(hello),
                                    connect_by + kAnswerGrace, if_dropped);
      !s.ok())
    return s;
  Welcome welcome;
  if (Status s = impl->receive(MessageType::welcome, &welcome, "its WELCOME", if_dropped); !s.ok()) return s;
  if (Status s = impl->check_payloads(welcome.payloads, payload, "WELCOME"); !s.ok()) return s;
  impl->payloads = std::move(welcome.payloads);
  impl->settings.logger.info(LogSubsys::init, fmt::format("bootstrap: rank {} of {} joined through the root at {}",
                                                          rank, nranks, impl->channel.root_text()));
  out->reset(new Bootstrap(std::move(impl)));
  return {};
}

Bootstrap::Bootstrap(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Bootstrap::~Bootstrap() { impl_->channel.close(); }

int Bootstrap::rank() const { return impl_->rank; }
int Bootstrap::nranks() const { return impl_->nranks; }
const std::vector<std::string>& Bootstrap::payloads() const { return impl_->payloads; }

Status Bootstrap::allgather(std::string mine, std::vector<std::string>* all) {
  if (!all) return invalid("Bootstrap::allgather: `all` is null: pass a vector to fill");
  if (mine.size() > kMaxFrameBody - 1024)
    return invalid(fmt::format("Bootstrap::allgather: {} bytes, over the {} one bootstrap message carries",
                               mine.size(), kMaxFrameBody - 1024));
  Impl& m = *impl_;
  if (!m.broken.ok()) return m.broken;
  const std::string waiting_for = fmt::format("the result of allgather round {}", m.round);
  const Deadline send_by = std::chrono::steady_clock::now() + m.settings.timeout;
  AllgatherResult result;
  Status s = m.channel.send(encode_frame(Allgather{m.round, mine}), send_by);
  if (s.ok()) s = m.receive(MessageType::allgather_result, &result, waiting_for);
  if (s.ok() && result.round != m.round)
    s = m.garbage(fmt::format("the result of allgather round {} where round {} was expected", result.round, m.round));
  if (s.ok()) s = m.check_payloads(result.payloads, mine, "ALLGATHER_RESULT");
  if (!s.ok()) {
    m.broken = s;
    m.channel.close();
    return s;
  }
  ++m.round;
  *all = std::move(result.payloads);
  return {};
}

void Bootstrap::set_give_up(std::function<bool()> give_up) { impl_->channel.set_give_up(std::move(give_up)); }

Status Bootstrap::barrier() {
  std::vector<std::string> ignored;
  return allgather({}, &ignored);
}

}  // namespace canopy
