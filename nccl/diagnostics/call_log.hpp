// CANOPY_LOG=info lines of the NCCL API, once per communicator and (function, type, size class), as NCCL_DEBUG=INFO
// says what it chose: whether Canopy served the call (its protocol, and the planned trees) or passed it to the real
// NCCL, or refused it, and why. Size classes are powers of 4 in bytes ("[64K, 256K)"). The texts are pure functions,
// tested on any CPU; CallLog keeps which lines a communicator has said.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <string>

#include "core/logger.hpp"
#include "runtime/comm/communicator.hpp"

namespace canopy::nccl_api {

// The power-of-4 byte bucket holding `bytes`: "0 B", "[1, 4)", "[4, 16)", ..., "[1K, 4K)", "[1M, 4M)", ...
std::string size_class(std::uint64_t bytes);
// What the runtime chose for a served call: "LL", "LL two-shot", "LL128", "direct", "direct two-shot", "copy
// engines", "planned trees (4 trees)".
std::string choice_text(const Communicator::Choice& choice);
// "nccl: ncclAllReduce ncclFloat32 [64K, 256K) (rank 1 of 2): served by Canopy, LL128"; a datatype outside
// ncclDataType_t (a call without one, ncclSend's log line) leaves out the type and size class.
std::string call_log_line(const std::string& function, ncclDataType_t datatype, std::uint64_t bytes, int rank,
                          int nranks, const std::string& outcome);

class CallLog {
 public:
  explicit CallLog(Logger log = Logger::from_environment()) : log_(std::move(log)) {}
  bool on() const { return log_.enabled(LogLevel::info, LogSubsys::run); }
  // Logs `outcome` (made only when the line is new: a callable returning the text) at info, once per (function,
  // datatype, size class).
  template <class Outcome>
  void note(const std::string& function, ncclDataType_t datatype, std::uint64_t bytes, int rank, int nranks,
            Outcome&& outcome) {
    if (!on()) return;
    std::string key = function + " " + std::to_string(static_cast<int>(datatype)) + " " + size_class(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!said_.insert(std::move(key)).second) return;
    }
    log_.info(LogSubsys::run, call_log_line(function, datatype, bytes, rank, nranks, outcome()));
  }
  // Logs `text` at warn (shown by default) the first time `key` is given to this communicator's log: a refusal users
  // must see even where the caller does not print ncclGetLastError (PyTorch's and nccl-tests' messages do not always).
  void warn_once(const std::string& key, const std::string& text) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!said_.insert("warn " + key).second) return;
    }
    log_.warn(LogSubsys::run, text);
  }
  Logger& logger() { return log_; }

 private:
  Logger log_;
  std::mutex mutex_;
  std::set<std::string> said_;
};

}  // namespace canopy::nccl_api
