// CANOPY_NCCL_FORWARD and CANOPY_NCCL_REAL parsing (forward_list.hpp).
#include "nccl/config/forward_list.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace canopy::nccl_api {

namespace {

std::string normalised(std::string s) {
  std::erase_if(s, [](unsigned char c) { return std::isspace(c); });
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

Status parse_forward_list(const std::string& text, ForwardSet* out) {
  out->clear();
  const std::string list = normalised(text);
  for (std::size_t start = 0; start <= list.size();) {
    std::size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    if (name == "all") {
      *out = {Collective::allreduce, Collective::broadcast, Collective::reduce, Collective::allgather,
              Collective::reducescatter};
    } else if (name == "allreduce") {
      out->insert(Collective::allreduce);
    } else if (name == "broadcast" || name == "bcast") {
      out->insert(Collective::broadcast);
    } else if (name == "reduce") {
      out->insert(Collective::reduce);
    } else if (name == "allgather") {
      out->insert(Collective::allgather);
    } else if (name == "reducescatter" || name == "reduce_scatter" || name == "reduce-scatter") {
      out->insert(Collective::reducescatter);
    } else {
      return Status(StatusCode::invalid_argument,
                    fmt::format("CANOPY_NCCL_FORWARD names '{}': it takes a comma-separated list of allreduce, "
                                "broadcast, reduce, allgather, reducescatter, or all",
                                name));
    }
  }
  return Status();
}

Status forward_list_from_environment(ForwardSet* out) {
  const char* v = std::getenv("CANOPY_NCCL_FORWARD");
  return parse_forward_list(v ? v : "", out);
}

Status parse_real_mode(const std::string& text, RealMode* out) {
  const std::string v = normalised(text);
  if (v.empty() || v == "auto") *out = RealMode::automatic;
  else if (v == "0" || v == "off" || v == "no" || v == "false") *out = RealMode::off;
  else if (v == "1" || v == "on" || v == "yes" || v == "true") *out = RealMode::required;
  else
    return Status(StatusCode::invalid_argument,
                  fmt::format("CANOPY_NCCL_REAL='{}': it takes auto (a real NCCL communicator where every rank can "
                              "have one), 0 (never) or 1 (required)",
                              text));
  return Status();
}

Status real_mode_from_environment(RealMode* out) {
  const char* v = std::getenv("CANOPY_NCCL_REAL");
  return parse_real_mode(v ? v : "", out);
}

const char* to_string(RealMode mode) {
  switch (mode) {
    case RealMode::automatic: return "auto";
    case RealMode::off: return "0";
    case RealMode::required: return "1";
  }
  return "?";
}

}  // namespace canopy::nccl_api
