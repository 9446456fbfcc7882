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
  *out = ForwardSet{};
  const std::string list = normalised(text);
  for (std::size_t start = 0; start <= list.size();) {
    std::size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    if (name == "all") {
      out->collectives = {Collective::allreduce, Collective::broadcast, Collective::reduce, Collective::allgather,
                          Collective::reducescatter};
      out->point_to_point = {PointToPointCall::sendrecv, PointToPointCall::alltoall, PointToPointCall::gather,
                             PointToPointCall::scatter};
    } else if (name == "allreduce") {
      out->collectives.insert(Collective::allreduce);
    } else if (name == "broadcast" || name == "bcast") {
      out->collectives.insert(Collective::broadcast);
    } else if (name == "reduce") {
      out->collectives.insert(Collective::reduce);
    } else if (name == "allgather") {
      out->collectives.insert(Collective::allgather);
    } else if (name == "reducescatter" || name == "reduce_scatter" || name == "reduce-scatter") {
      out->collectives.insert(Collective::reducescatter);
    } else if (name == "sendrecv" || name == "send_recv") {
      out->point_to_point.insert(PointToPointCall::sendrecv);
    } else if (name == "alltoall" || name == "all_to_all") {
      out->point_to_point.insert(PointToPointCall::alltoall);
    } else if (name == "gather") {
      out->point_to_point.insert(PointToPointCall::gather);
    } else if (name == "scatter") {
      out->point_to_point.insert(PointToPointCall::scatter);
    } else {
      return Status(StatusCode::invalid_argument,
                    fmt::format("CANOPY_NCCL_FORWARD names '{}': it takes a comma-separated list of allreduce, "
                                "broadcast, reduce, allgather, reducescatter, sendrecv, alltoall, gather, scatter, or "
                                "all",
                                name));
    }
  }
  return Status();
}

const char* to_string(PointToPointCall call) {
  switch (call) {
    case PointToPointCall::sendrecv: return "sendrecv";
    case PointToPointCall::alltoall: return "alltoall";
    case PointToPointCall::gather: return "gather";
    case PointToPointCall::scatter: return "scatter";
  }
  return "?";
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
