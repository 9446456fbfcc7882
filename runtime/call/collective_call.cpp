// check_call and the buffer sizes of a collective call (see collective_call.hpp).
#include "runtime/call/collective_call.hpp"

#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace canopy {

namespace {

std::string pointer_text(const void* p) { return fmt::format("{}", fmt::ptr(p)); }

std::string memory_text(MemoryKind k) {
  switch (k) {
    case MemoryKind::unregistered: return "host memory CUDA does not know";
    case MemoryKind::host: return "pinned host memory";
    case MemoryKind::device: return "device memory";
    case MemoryKind::managed: return "managed memory";
  }
  return "?";
}

struct Region {
  std::uintptr_t begin = 0, end = 0;
  int rank = 0;
  bool written = false;
  const char* what = "";
};

}  // namespace

std::string call_name(Collective c) {
  switch (c) {
    case Collective::broadcast: return "broadcast";
    case Collective::reduce: return "reduce";
    case Collective::allreduce: return "allreduce";
    case Collective::allgather: return "allgather";
    case Collective::reducescatter: return "reduce_scatter";
  }
  return "?";
}

std::string call_name(const CollectiveCall& call) {
  return call.program ? "algorithm " + call.program->name() : call_name(call.collective);
}

std::uint64_t send_elements(Collective collective, std::uint64_t count, int ranks, int rank, int root) {
  switch (collective) {
    case Collective::broadcast: return rank == root ? count : 0;
    case Collective::reducescatter: return count * static_cast<std::uint64_t>(ranks);
    default: return count;
  }
}

std::uint64_t recv_elements(Collective collective, std::uint64_t count, int ranks, int rank, int root) {
  switch (collective) {
    case Collective::reduce: return rank == root ? count : 0;
    case Collective::allgather: return count * static_cast<std::uint64_t>(ranks);
    default: return count;
  }
}

std::uint64_t max_count(Collective collective, DataType dtype, int ranks) {
  // The kernels cut ranges of up to count x ranks elements with 64-bit products of 16-bit fractions (< 2^48) and
  // count a block's chunks in 32 bits (>= 128 elements a chunk): 2^38 elements keeps both, and is far beyond
  // any GPU's memory.
  const std::uint64_t elements = std::uint64_t{1} << 38;
  const std::uint64_t per = collective == Collective::allgather || collective == Collective::reducescatter
                                ? static_cast<std::uint64_t>(std::max(ranks, 1))
                                : 1;
  return std::min(elements, (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(size_of(dtype))) / per;
}

std::uint64_t size_bytes(Collective collective, std::uint64_t count, DataType dtype, int ranks) {
  const std::uint64_t per = collective == Collective::allgather || collective == Collective::reducescatter
                                ? static_cast<std::uint64_t>(ranks)
                                : 1;
  return count * per * static_cast<std::uint64_t>(size_of(dtype));
}

int widest_buffer_chunks(const algo::Program& program) {
  return std::max(program.buffer_chunks(algo::Buffer::input), program.buffer_chunks(algo::Buffer::output));
}

std::uint64_t size_bytes(const algo::Program& program, std::uint64_t count, DataType dtype) {
  return count / static_cast<std::uint64_t>(program.chunks()) *
         static_cast<std::uint64_t>(widest_buffer_chunks(program)) * static_cast<std::uint64_t>(size_of(dtype));
}

std::uint64_t max_count(const algo::Program& program, DataType dtype) {
  const std::uint64_t widest = static_cast<std::uint64_t>(widest_buffer_chunks(program));
  const std::uint64_t chunks = static_cast<std::uint64_t>(program.chunks());
  return std::min(std::uint64_t{1} << 38, (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(size_of(dtype))) /
         widest * chunks;
}

Status check_call(const CollectiveCall& call, const std::vector<int>& device_of_rank, const CallOracle& oracle,
                  bool* capturing, std::span<unsigned long long> stream_ids, std::span<const char> own) {
  const auto mine = [&](int r) { return own.empty() || own[r]; };
  if (capturing) *capturing = false;
  std::fill(stream_ids.begin(), stream_ids.end(), 0ull);
  const int n = static_cast<int>(device_of_rank.size());
  const std::string name = call_name(call);
  const algo::Program* program = call.program;
  auto invalid = [&](std::string message) {
    return Status(StatusCode::invalid_argument, fmt::format("{}: {}", name, message));
  };
  if (!program && static_cast<unsigned>(call.collective) > static_cast<unsigned>(Collective::reducescatter))
    return invalid(fmt::format("collective {} is not one of broadcast, reduce, allreduce, allgather, reduce_scatter",
                               static_cast<int>(call.collective)));
  if (static_cast<unsigned>(call.dtype) >= static_cast<unsigned>(kDataTypeCount))
    return Status(StatusCode::unsupported, fmt::format("{}: dtype {} is not supported; use {}", name,
                                                       static_cast<int>(call.dtype), data_type_choices()));
  const bool combines = program ? program->reduces() : reduces(call.collective);
  if (combines && static_cast<unsigned>(call.op) > static_cast<unsigned>(ReduceOp::avg))
    return Status(StatusCode::unsupported, fmt::format("{}: reduction operator {} is not supported; use sum, prod, "
                                                       "min, max or avg",
                                                       name, static_cast<int>(call.op)));
  if (program && program->reduces() && call.op == ReduceOp::avg)
    return Status(StatusCode::unsupported,
                  fmt::format("{}: avg is for the five collectives (the sum divided by the ranks); a program's outputs "
                              "combine a number of inputs of its own: run it with sum and divide",
                              name));
  if (static_cast<int>(call.send.size()) != n || static_cast<int>(call.recv.size()) != n ||
      static_cast<int>(call.streams.size()) != n)
    return invalid(fmt::format("got {} send buffers, {} receive buffers and {} streams for {} ranks: pass one of "
                               "each per rank, in rank order",
                               call.send.size(), call.recv.size(), call.streams.size(), n));
  if (program && program->ranks() != n)
    return invalid(fmt::format("the program is written for {} ranks but the communicator has {}: build it for {}",
                               program->ranks(), n, n));
  if (!program && has_root(call.collective) && (call.root < 0 || call.root >= n))
    return invalid(fmt::format("root {} is not a rank: use 0 to {}", call.root, n - 1));
  const std::uint64_t limit = program ? max_count(*program, call.dtype) : max_count(call.collective, call.dtype, n);
  if (call.count > limit)
    return invalid(fmt::format("count {} is too large for {} ranks of {}: at most {} elements", call.count, n,
                               to_string(call.dtype), limit));
  if (program && call.count % static_cast<std::uint64_t>(program->chunks()) != 0)
    return invalid(fmt::format(
        "count {} is not a multiple of the program's {} chunks (each chunk is count / {} "
        "elements): round it to {} or {}",
        call.count, program->chunks(), program->chunks(), call.count / program->chunks() * program->chunks(),
        (call.count / program->chunks() + 1) * program->chunks()));

  // Streams: on the rank's GPU; ranks of one GPU share one (they run in one launch); all capturing or none.
  int first_capturing = -1, first_not = -1;
  for (int r = 0; r < n; ++r) {
    if (!mine(r)) continue;
    const cudaStream_t s = call.streams[r];
    // An earlier rank of this GPU with this stream had it asked about already (virtual ranks share one).
    bool asked = false;
    for (int q = 0; q < r && !asked; ++q)
      asked = mine(q) && device_of_rank[q] == device_of_rank[r] && call.streams[q] == s;
    // First: asking a capturing stream for its device (cuStreamGetDevice) invalidates the capture.
    const bool captures = !asked && oracle.stream_capturing && oracle.stream_capturing(s);
    if (!asked) (captures ? first_capturing : first_not) = r;
    if (first_capturing >= 0 && first_not >= 0)
      return Status(StatusCode::unsupported,
                    fmt::format("{}: streams[{}] ({}) is capturing a CUDA graph but streams[{}] ({}) is not: the "
                                "kernels of one call wait for each other on every GPU, so capture every rank's "
                                "stream (one capture that forks to each GPU's stream, or one per GPU, replayed "
                                "together) or none",
                                name, first_capturing, pointer_text(call.streams[first_capturing]), first_not,
                                pointer_text(call.streams[first_not])));
    if (!asked && !captures && !is_default_stream(s)) {
      const std::optional<StreamFacts> facts = oracle.stream(s);
      if (!facts) return invalid(fmt::format("streams[{}] ({}) is not a valid CUDA stream", r, pointer_text(s)));
      if (facts->device != device_of_rank[r])
        return invalid(fmt::format("streams[{}] belongs to GPU {}, but rank {} runs on GPU {}: create it on GPU {}", r,
                                   facts->device, r, device_of_rank[r], device_of_rank[r]));
      if (static_cast<std::size_t>(r) < stream_ids.size()) stream_ids[r] = facts->id;
    }
    for (int q = 0; q < r; ++q)
      if (mine(q) && device_of_rank[q] == device_of_rank[r] && call.streams[q] != s)
        return invalid(fmt::format("ranks {} and {} both run on GPU {} (one launch) but were given different streams "
                                   "({} and {}): give them the same stream",
                                   q, r, device_of_rank[r], pointer_text(call.streams[q]), pointer_text(s)));
  }
  if (capturing) *capturing = first_capturing >= 0;
  if (call.count == 0) return Status();  // nothing moves: NCCL accepts this as a no-op

  const std::uint64_t elem = static_cast<std::uint64_t>(size_of(call.dtype));
  // Up to 16 buffers (8 ranks in this process) without a heap allocation: small calls feel one.
  boost::container::small_vector<Region, 16> regions;
  regions.reserve(2 * static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    if (!mine(r)) continue;
    const std::uint64_t unit = program ? call.count / static_cast<std::uint64_t>(program->chunks()) : 0;
    const std::uint64_t send_bytes = (program ? unit * program->buffer_chunks(algo::Buffer::input)
                                              : send_elements(call.collective, call.count, n, r, call.root)) *
                                     elem;
    const std::uint64_t recv_bytes = (program ? unit * program->buffer_chunks(algo::Buffer::output)
                                              : recv_elements(call.collective, call.count, n, r, call.root)) *
                                     elem;
    struct Use {
      const void* p;
      std::uint64_t bytes;
      const char* what;
      bool written;
    };
    const Use uses[] = {{call.send[r], send_bytes, "send", false}, {call.recv[r], recv_bytes, "recv", true}};
    // A rank's send facts, when its recv lies in the same allocation (in place, or carved from one buffer): what
    // the driver says of an allocation holds for every pointer inside it, so it is asked once.
    std::optional<PointerFacts> send_facts;
    for (const Use& u : uses) {
      if (u.bytes == 0) continue;
      if (u.p == nullptr)
        return invalid(fmt::format("{}[{}] is null; rank {} needs {} bytes there", u.what, r, r, u.bytes));
      const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(u.p);
      if (at % elem != 0)
        return invalid(fmt::format("{}[{}] ({}) is not aligned to {}'s {} bytes", u.what, r, pointer_text(u.p),
                                   to_string(call.dtype), elem));
      regions.push_back({at, at + u.bytes, r, u.written, u.what});
      if (!oracle.pointer) continue;
      const bool same_allocation = send_facts && send_facts->allocation && at >= send_facts->allocation->base &&
                                   at - send_facts->allocation->base < send_facts->allocation->bytes;
      const PointerFacts f = same_allocation ? *send_facts : oracle.pointer(u.p);
      if (!u.written) send_facts = f;
      if (f.kind != MemoryKind::device && f.kind != MemoryKind::managed)
        return invalid(fmt::format("{}[{}] ({}) is {}, not device memory: allocate it with cudaMalloc on GPU {}", u.what,
                                   r, pointer_text(u.p), memory_text(f.kind), device_of_rank[r]));
      if (f.kind == MemoryKind::device && f.device != device_of_rank[r])
        return invalid(fmt::format("{}[{}] ({}) is on GPU {}, but rank {} runs on GPU {}: allocate it on GPU {}",
                                   u.what, r, pointer_text(u.p), f.device, r, device_of_rank[r], device_of_rank[r]));
      if (f.allocation && (at < f.allocation->base || at - f.allocation->base > f.allocation->bytes ||
                           u.bytes > f.allocation->bytes - (at - f.allocation->base)))
        return invalid(fmt::format(
            "{}[{}] ({}) needs {} bytes ({} x {} elements) but its allocation ends {} bytes "
            "after it: pass a smaller count or a larger buffer",
            u.what, r, pointer_text(u.p), u.bytes, u.bytes / elem, to_string(call.dtype),
            f.allocation->base + f.allocation->bytes - std::min(at, f.allocation->base + f.allocation->bytes)));
    }
    // In place, NCCL's way, or disjoint.
    if (send_bytes > 0 && recv_bytes > 0) {
      const std::uintptr_t s = reinterpret_cast<std::uintptr_t>(call.send[r]);
      const std::uintptr_t d = reinterpret_cast<std::uintptr_t>(call.recv[r]);
      const std::uint64_t block = call.count * elem * static_cast<std::uint64_t>(r);
      // A program's layout is its goal's (alltoall and custom goals: send = recv).
      const Collective shape = program ? program->collective().value_or(Collective::allreduce) : call.collective;
      const bool in_place = shape == Collective::allgather       ? s == d + block
                            : shape == Collective::reducescatter ? d == s + block
                                                                 : s == d;
      const bool disjoint = s + send_bytes <= d || d + recv_bytes <= s;
      if (program && !disjoint && !(in_place && program->runs_in_place()))
        return invalid(fmt::format(
            "send[{}] and recv[{}] overlap: {}; use separate buffers", r, r,
            program->runs_in_place()
                ? "this in-place program takes NCCL's in-place layout only (allgather: send = recv + rank x count; "
                  "reduce-scatter: recv = send + rank x count; else send = recv), not another overlap"
                : "this algorithm program runs out of place (its statements read inputs after writing outputs; "
                  "MSCCL-IR programs declared inplace=\"1\" run in place)"));
      if (!in_place && !disjoint) {
        const char* rule = call.collective == Collective::allgather       ? "send = recv + rank x count elements"
                           : call.collective == Collective::reducescatter ? "recv = send + rank x count elements"
                                                                          : "send = recv";
        return invalid(fmt::format("send[{}] and recv[{}] overlap without being in place ({}): use separate buffers "
                                   "or exactly that layout",
                                   r, r, rule));
      }
    }
  }
  // No rank writes memory another rank reads or writes (virtual ranks share a GPU, so this can happen).
  std::sort(regions.begin(), regions.end(), [](const Region& a, const Region& b) { return a.begin < b.begin; });
  const Region* widest = nullptr;
  for (const Region& g : regions) {
    if (widest && g.begin < widest->end && g.rank != widest->rank && (g.written || widest->written))
      return invalid(fmt::format("{}[{}] and {}[{}] overlap: ranks must not share buffers they write", widest->what,
                                 widest->rank, g.what, g.rank));
    if (!widest || g.end > widest->end) widest = &g;
  }
  return Status();
}

}  // namespace canopy
