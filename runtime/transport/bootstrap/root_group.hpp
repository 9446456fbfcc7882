// RootGroup: the bootstrap root's rules, apart from its sockets: who joined under which rank, whether their HELLOs
// agree (nranks, rank range, no rank twice, one Canopy version), which allgather round is under way and who gave
// its part, who left. The root names each connection by an id and the peer's address. An event that fails the whole
// group returns the error; the root sends its text to every rank and stops.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "runtime/transport/bootstrap/frame.hpp"

namespace canopy {

class RootGroup {
 public:
  // `timeout_text` ("120 s") goes into the timeout messages.
  explicit RootGroup(std::string timeout_text) : timeout_text_(std::move(timeout_text)) {}

  // A well-formed HELLO carrying the right secret, on connection `conn` from `peer`, before the group formed.
  Status join(int conn, const std::string& peer, const Hello& hello);
  bool formed() const { return nranks_ > 0 && members_.size() == static_cast<std::size_t>(nranks_); }
  bool anyone_joined() const { return !members_.empty(); }
  int nranks() const { return nranks_; }  // 0 until the first HELLO
  std::optional<int> rank_of(int conn) const;
  Welcome welcome() const;

  // An ALLGATHER on a joined connection of a formed group. `*done`: it completed the round (take_result() then).
  Status contribute(int conn, const Allgather& m, bool* done);
  AllgatherResult take_result();
  std::size_t parts_in_round() const { return round_parts_.size(); }

  // A joined connection closed. An error naming the rank when that breaks the group (before it formed, or during
  // an allgather round).
  Status leave(int conn);
  bool everyone_left() const;  // formed, and every rank's connection has closed

  // "ranks 2, 3 of 4 did not join within 120 s (CANOPY_BOOTSTRAP_TIMEOUT_S)"
  std::string join_timeout_message() const;
  // "allgather round 3: rank 1 of 4 did not take part within 120 s (CANOPY_BOOTSTRAP_TIMEOUT_S)"
  std::string round_timeout_message() const;

 private:
  struct Member {
    int conn = -1;
    std::string peer;
    std::string payload;
    bool left = false;
  };
  std::string who(int rank) const;  // "rank 2 (at 10.0.0.2:40312)"
  // "ranks 2, 3 of 4", for those of 0..nranks-1 that `present` says are missing.
  template <class Present>
  std::string missing_ranks(Present present) const;
  // Whether `count` payloads of `bytes` in all fit one message (WELCOME or ALLGATHER_RESULT).
  static Status check_fits(std::size_t bytes, std::size_t count, const std::string& what);

  std::string timeout_text_;
  int nranks_ = 0;       // from the first HELLO
  std::string version_;  // from the first HELLO
  int first_rank_ = -1;
  std::map<int, Member> members_;  // by rank
  std::map<int, int> rank_of_conn_;
  std::uint32_t round_ = 0;
  std::map<int, std::string> round_parts_;  // by rank
};

}  // namespace canopy
