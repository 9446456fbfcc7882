// EngineBoards: the host's half of the copy engines across two processes (ProcessEngines): each process's board, a
// page both map, and phase one of every engine call on them, where the processes agree which buffers the engines
// write. A process publishes its buffers for a call (UserBuffers: an IPC handle, or a cuMemCreate allocation's
// descriptor sent on the join's FdChannel the first time) or that it cannot share them, and the other maps them:
// - agree: one publishes (a broadcast's receiver, a reduce's root) and the other maps (the process that writes);
// - agree_both: both publish and both map (an allreduce), process 0 first, so that each descriptor's send, which
//   waits for its receiver, meets the other's receiving.
// Calls alternate between two sets of buffers on each board, so a publisher one call ahead does not overwrite what
// the other has not read yet; before reusing a set it waits until the other has read that set's last publication,
// however many calls back it lies. Nothing here touches a GPU but through the BufferDriver, so the agreement is
// tested on any CPU with a fake driver and boards in plain memory.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"
#include "runtime/transport/ipc/user_buffers.hpp"

namespace canopy {

// A process's board: words the side streams wait for and write (through StreamWords), then what the host publishes.
struct EngineBoard {
  static constexpr int kMaxRanks = 16;  // of a process: the receive buffers a board holds
  std::uint32_t ready = 0;     // GPU: the owner's side stream reached this engine call
  std::uint32_t done = 0;      // GPU: a broadcast root's copies into the owner's buffers for this call are done
  std::uint32_t landed = 0;    // GPU: reduce or allreduce input chunks pushed into the owner's receive buffer
  std::uint32_t returned = 0;  // GPU: an allreduce's chunks whose sums the other process pushed back
  std::uint32_t words_pad[28] = {};
  std::uint64_t published[2] = {};  // host, by call parity: the call whose buffers are in that set
  std::uint64_t consumed = 0;       // host: the last call whose publication the other process has read
  std::uint32_t ranks[2] = {};      // host, by parity: how many buffers, or kUnshared
  SharedBuffer buffers[2][kMaxRanks];
};

class EngineBoards {
 public:
  // This process is `process` (0 or 1); boards[p] is process p's (both mapped here). `fd_buffers`: this process's
  // cuMemCreate buffers cross as descriptors on `channel` (else they are refused). `driver`: UserBuffers' calls.
  EngineBoards(int process, bool fd_buffers, FdChannel* channel, std::array<EngineBoard*, 2> boards,
               const BufferDriver& driver);

  // Phase one of an engine call of `bytes`. `maps`: this process writes into the other's buffers and maps what the
  // other publishes; else it publishes `dst`, or that it cannot share them: where `refuse` is not empty (why), or a
  // buffer cannot be shared. *shared: whether the engines move the call; both processes get the same answer.
  // `failed` is polled while this process waits for the other, at most `timeout`.
  Status agree(bool maps, std::span<void* const> dst, std::size_t bytes, const std::function<bool()>& failed,
               std::chrono::milliseconds timeout, bool* shared, std::string_view refuse = {});
  // Phase one where both write into the other's buffer: each publishes `recv` (or refuses) and maps the other's.
  Status agree_both(void* recv, std::size_t bytes, const std::function<bool()>& failed,
                    std::chrono::milliseconds timeout, bool* shared, std::string_view refuse = {});

  // Engine calls agreed so far (both processes count alike; readable from any thread).
  std::uint64_t calls() const;
  // The other process's buffers of the last call this process mapped.
  const std::vector<void*>& mapped() const { return mapped_; }
  // Why this process's buffers of the last call it published could not be shared ("" when they were).
  const std::string& unshared_why() const { return unshared_why_; }
  EngineBoard& board(int process) const { return *boards_[process]; }

 private:
  std::uint64_t next_call();
  Status publish(std::uint64_t call, std::span<void* const> dst, std::size_t bytes,
                 const std::function<bool()>& failed, std::chrono::milliseconds timeout, std::string_view refuse);
  Status map_other(std::uint64_t call, std::size_t bytes, const std::function<bool()>& failed,
                   std::chrono::milliseconds timeout, bool* shared);

  int process_ = 0;
  bool fd_buffers_ = false;
  FdChannel* channel_ = nullptr;  // outlives this
  std::array<EngineBoard*, 2> boards_{};
  std::uint64_t calls_ = 0;
  std::uint64_t published_[2] = {};  // the call this process last published in each set of its board (0: none)
  std::vector<void*> mapped_;
  std::string unshared_why_;
  BufferExports exports_;
  BufferImports imports_;
};

}  // namespace canopy
