// Status text (see status.hpp).
#include "core/status.hpp"

namespace canopy {

std::string to_string(StatusCode code) {
  switch (code) {
    case StatusCode::ok: return "ok";
    case StatusCode::invalid_argument: return "invalid argument";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::no_peer_access: return "no peer access";
    case StatusCode::cuda_error: return "CUDA error";
    case StatusCode::compile_error: return "compile error";
    case StatusCode::remote_error: return "remote error";
    case StatusCode::internal: return "internal error";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return canopy::to_string(code_) + ": " + message_;
}

}  // namespace canopy
