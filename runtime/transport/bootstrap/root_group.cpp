// The bootstrap root's rules (see root_group.hpp).
#include "runtime/transport/bootstrap/root_group.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace canopy {

std::string RootGroup::who(int rank) const {
  const auto m = members_.find(rank);
  return m == members_.end() ? fmt::format("rank {}", rank) : fmt::format("rank {} (at {})", rank, m->second.peer);
}

Status RootGroup::check_fits(std::size_t bytes, std::size_t count, const std::string& what) {
  const std::size_t body = 8 + 4 * count + bytes;
  if (body <= kMaxFrameBody) return {};
  return Status(StatusCode::invalid_argument,
                fmt::format("{}: the ranks' payloads total {} bytes, over the {} MiB one bootstrap message carries: "
                            "send less at a time",
                            what, bytes, kMaxFrameBody >> 20));
}

Status RootGroup::join(int conn, const std::string& peer, const Hello& hello) {
  const int rank = static_cast<int>(hello.rank), nranks = static_cast<int>(hello.nranks);
  const std::string sender = fmt::format("rank {} (at {})", hello.rank, peer);
  const auto fail = [](std::string text) { return Status(StatusCode::invalid_argument, std::move(text)); };
  if (hello.nranks < 1 || hello.nranks > (1u << 30))
    return fail(fmt::format("{} says the group has {} ranks", sender, hello.nranks));
  if (nranks_ == 0) nranks_ = nranks, version_ = hello.version, first_rank_ = rank;
  if (nranks != nranks_)
    return fail(fmt::format("{} says the group has {} ranks, but {} said {}: give every rank the same nranks",
                            sender, nranks, who(first_rank_), nranks_));
  if (hello.rank >= hello.nranks)
    return fail(fmt::format("{} is not a rank of a group of {} (0 to {})", sender, nranks, nranks - 1));
  if (hello.version != version_)
    return fail(fmt::format("{} runs Canopy {}, but {} runs Canopy {}: run one Canopy version in every process",
                            sender, hello.version, who(first_rank_), version_));
  if (const auto m = members_.find(rank); m != members_.end())
    return fail(fmt::format("rank {} joined twice: from {} and from {}: give each process its own rank", rank,
                            m->second.peer, peer));
  std::size_t bytes = hello.payload.size();
  for (const auto& [r, m] : members_) bytes += m.payload.size();
  if (Status s = check_fits(bytes, members_.size() + 1, "WELCOME"); !s.ok()) return s;
  members_[rank] = {conn, peer, hello.payload, false};
  rank_of_conn_[conn] = rank;
  return {};
}

std::optional<int> RootGroup::rank_of(int conn) const {
  const auto r = rank_of_conn_.find(conn);
  if (r == rank_of_conn_.end()) return std::nullopt;
  return r->second;
}

Welcome RootGroup::welcome() const {
  Welcome w;
  for (const auto& [rank, m] : members_) w.payloads.push_back(m.payload);
  return w;
}

Status RootGroup::contribute(int conn, const Allgather& m, bool* done) {
  *done = false;
  const int rank = rank_of_conn_.at(conn);
  const auto fail = [](std::string text) { return Status(StatusCode::invalid_argument, std::move(text)); };
  if (m.round != round_)
    return fail(fmt::format("{} sent its part of allgather round {}, but the group is at round {}", who(rank),
                            m.round, round_));
  if (round_parts_.count(rank))
    return fail(fmt::format("{} sent its part of allgather round {} twice", who(rank), round_));
  for (const auto& [r, member] : members_)
    if (member.left)
      return fail(fmt::format("allgather round {}: {} has left the group, so the round cannot complete", round_,
                              who(r)));
  std::size_t bytes = m.payload.size();
  for (const auto& [r, part] : round_parts_) bytes += part.size();
  if (Status s = check_fits(bytes, round_parts_.size() + 1, fmt::format("allgather round {}", round_)); !s.ok())
    return s;
  round_parts_[rank] = m.payload;
  *done = round_parts_.size() == members_.size();
  return {};
}

AllgatherResult RootGroup::take_result() {
  AllgatherResult result{round_, {}};
  for (auto& [rank, part] : round_parts_) result.payloads.push_back(std::move(part));
  round_parts_.clear();
  ++round_;
  return result;
}

Status RootGroup::leave(int conn) {
  const auto r = rank_of_conn_.find(conn);
  if (r == rank_of_conn_.end()) return {};
  const int rank = r->second;
  Member& m = members_.at(rank);
  if (!formed())
    return Status(StatusCode::remote_error,
                  fmt::format("{} closed its connection before all {} ranks joined", who(rank), nranks_));
  m.left = true;
  if (!round_parts_.empty())
    return Status(StatusCode::remote_error,
                  fmt::format("{} closed its connection during allgather round {}", who(rank), round_));
  return {};
}

bool RootGroup::everyone_left() const {
  if (!formed()) return false;
  for (const auto& [rank, m] : members_)
    if (!m.left) return false;
  return true;
}

template <class Present>
std::string RootGroup::missing_ranks(Present present) const {
  std::vector<int> missing;
  for (int r = 0; r < nranks_; ++r)
    if (!present(r)) missing.push_back(r);
  constexpr std::size_t kListed = 16;
  std::string list = fmt::format("{}", fmt::join(missing.begin(), missing.begin() + std::min(missing.size(), kListed),
                                                 ", "));
  if (missing.size() > kListed) list += fmt::format(" and {} more", missing.size() - kListed);
  return fmt::format("{} {} of {}", missing.size() == 1 ? "rank" : "ranks", list, nranks_);
}

std::string RootGroup::join_timeout_message() const {
  if (nranks_ == 0) return fmt::format("no rank joined within {} (CANOPY_BOOTSTRAP_TIMEOUT_S)", timeout_text_);
  return fmt::format("{} did not join within {} (CANOPY_BOOTSTRAP_TIMEOUT_S)",
                     missing_ranks([&](int r) { return members_.count(r) > 0; }), timeout_text_);
}

std::string RootGroup::round_timeout_message() const {
  return fmt::format("allgather round {}: {} did not take part within {} (CANOPY_BOOTSTRAP_TIMEOUT_S)", round_,
                     missing_ranks([&](int r) { return round_parts_.count(r) > 0; }), timeout_text_);
}

}  // namespace canopy
