// What Blink+'s relays cost their GPUs' owners in memory, and the cap on it: each relay participant of a schedule
// (codegen/schedule.hpp RelayParticipant) holds one FIFO ring per tree edge it forwards, fifo_depth slots of one chunk
// for each of the lane's blocks. The ring's size is set by the chunk size, the FIFO depth and the blocks; its total on
// a relay GPU is capped by CANOPY_RELAY_MEMORY (default 64 MiB), and fit_relay_memory shrinks the shape until every
// relay GPU fits (docs/codegen.md "Relays").
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "codegen/codegen_options.hpp"
#include "codegen/schedule.hpp"
#include "planner/plan.hpp"

namespace canopy {

constexpr std::int64_t kDefaultRelayMemoryBytes = 64ll << 20;

// Scratch bytes per relay GPU (the sum over its participants): what it allocates for the schedule's rings.
std::map<std::string, std::int64_t> relay_memory(const Schedule& schedule);

// CANOPY_RELAY_MEMORY (bytes, with a unit: 64MiB, 1G), kDefaultRelayMemoryBytes when unset; throws canopy::Error naming
// the variable and the fix for a value that is not a size of at least 1 MiB.
std::int64_t relay_memory_cap_from_environment();

// `options` (whose relay_gpus name the plan's relays) with the FIFO depth, then the chunk size, halved until every
// relay GPU's rings fit `cap` bytes: the depth down to 2 slots, the chunk down to 16 KiB (or the options' own where
// smaller); unchanged where they already fit. Throws canopy::Error naming the relay GPU, what it needs at the smallest
// shape and the cap, when even that does not fit.
CodegenOptions fit_relay_memory(const Plan& plan, CodegenOptions options, std::int64_t cap);

}  // namespace canopy
