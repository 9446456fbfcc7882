// Status: what every runtime call returns (errors are values, never crashes). ok(), or a code and a message
// that names the argument at fault and the fix, e.g. "allreduce: recv[1] (0x7f..) is on GPU 0, but rank gpu1
// runs on GPU 1: allocate it on GPU 1".
#pragma once

#include <string>
#include <utility>

namespace canopy {

enum class StatusCode {
  ok,
  invalid_argument,  // a pointer, count, rank, stream, dtype or op the call cannot take
  unsupported,       // valid, but not something Canopy does (yet)
  no_peer_access,    // a plan needs two GPUs that cannot reach each other's memory
  cuda_error,        // the CUDA runtime or driver failed
  compile_error,     // planning, code generation or NVRTC failed
  remote_error,      // another process of the job, or the network to it, failed: unreachable, closed, timed out,
                     // answered garbage or refused us (NCCL's ncclRemoteError)
  internal,          // a bug in Canopy: please report it
};

std::string to_string(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: allreduce: count ..." (or "ok").
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

}  // namespace canopy
