// CommunicatorConfig: everything a Communicator is configured with besides its GPUs and topology, resolved once from
// CommunicatorOptions, else the CANOPY_ variables (comm/runtime_env.hpp), else the defaults, and checked: a negative
// limit, a share out of range or a kernel shape the generator refuses is a canopy::Error naming the setting and the
// fix. No CUDA: tests/runtime/comm/communicator_config_test.cpp drives it on any CPU.
#pragma once

#include <cstdint>
#include <optional>

#include "codegen/codegen_options.hpp"
#include "codegen/relay_memory.hpp"
#include "runtime/comm/communicator_options.hpp"
#include "runtime/env/runtime_env.hpp"
#include "runtime/protocol/protocol_table.hpp"

namespace canopy {

struct CommunicatorConfig {
  CodegenOptions shape;                // requested chunk, FIFO depth, blocks, threads
  int large_blocks = 128;              // blocks per rank of the large-message kernels
  std::int64_t large_bytes = 8 << 20;  // per-rank buffer bytes from which a call is large
  int huge_blocks = 128;               // blocks per rank of the huge-message kernels
  std::int64_t huge_bytes = 0;         // per-rank buffer bytes from which a large call is huge (0: none is)
  bool chunk_fixed = false;            // CANOPY_CHUNK or CommunicatorOptions::chunk_bytes: tuning does not apply
  ProtocolSettings protocols;          // before fitting to the GPUs (make_protocol_table)
  LaunchThreads launch;
  HybridShape hybrid;
  std::optional<double> watchdog_seconds;  // unset: no watchdog
  bool check_pointers = true;              // CANOPY_CHECK_POINTERS
  CallCheck check_calls = CallCheck::host;  // CANOPY_CHECK_CALLS (multi-process communicators)
  bool stage_only_shared = false;          // CANOPY_STAGE_ONLY_SHARED (multi-process communicators)
  bool own_buffers = true;                 // CANOPY_OWN_BUFFERS (multi-process communicators)
  bool peer_buffers = true;                // CANOPY_PEER_BUFFERS (two processes on two GPUs)
  // CANOPY_INBOX_PIECE_BYTES, where given (the direct inbox kernels; 0: whole parts); unset: the defaults of
  // set_up_protocols (direct_own_buffers_default_piece_bytes across GPUs, else whole parts).
  std::optional<std::int64_t> inbox_piece_bytes;
  bool profile_calls = false;              // CANOPY_PROFILE_CALLS
  std::optional<double> stall_seconds;     // CANOPY_STALL_TIMEOUT_S (multi-process communicators; unset: off)
  int gpu_sharers = 0;                     // CANOPY_GPU_SHARERS (multi-process communicators; 0: their own count)
  // CommunicatorOptions::relay_memory, else CANOPY_RELAY_MEMORY: the cap on each relay GPU's rings (with relays).
  std::int64_t relay_memory = kDefaultRelayMemoryBytes;
};

// The configuration of a communicator of `ranks` ranks. Throws canopy::Error on a value out of range.
CommunicatorConfig resolve_config(const CommunicatorOptions& options, int ranks);

}  // namespace canopy
