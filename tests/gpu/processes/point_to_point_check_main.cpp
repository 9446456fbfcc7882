// canopy_p2p_check: one process of a multi-process datacheck of Communicator::send_recv, started N times by `canopy
// run -n N` (which sets CANOPY_RANK, CANOPY_NRANKS and CANOPY_UNIQUE_ID). Each process joins one communicator with
// --per-process ranks on its current GPU (all on GPU 0 under `canopy run` on one GPU), then, for every pattern, type
// and count, issues one group with its own ranks' ops only, as NCCL's ranks do (each rank on a stream of its own; odd
// processes post their receives first, so that processes post in different orders, but each pair's sends and its
// receives in their order: the k-th send meets the k-th receive), checks every byte it received and the bytes past
// each receive (untouched), then runs an allreduce (f32 sum; the process's ranks share its GPU, so one stream) and
// checks it element by element. --ungrouped 1 issues every op as a call of its own instead (Communicator::send and
// recv, as a lone ncclSend and ncclRecv; the ring pattern only, one rank a process, where odd processes receiving
// first keeps it free of deadlock, as in NCCL). The pattern alltoall-call is the all-to-all as ncclAlltoAll makes it
// (alltoall_ops, each rank's blocks end to end), which runs across processes on the all-to-all kernels.
// --refusals 1 first issues groups that each process refuses on its own (an op of another process's rank, a null
// buffer), then goes on with the matrix on the same communicator. --mismatch 1 only makes rank 0 send 8 f32 to the last
// rank, which receives 9: the side posting second refuses it naming both, and every process must then see the
// communicator failed (a later allreduce or the asynchronous error), no stream hanging.
// Prints one line per wrong case and a summary; exits 1 on anything wrong or failed, 2 on bad arguments.
//
//   canopy run -n 3 -- canopy_p2p_check --patterns ring,alltoall --dtypes f32,u8 --counts 0,7,65540
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/call/block_collectives.hpp"
#include "runtime/call/point_to_point.hpp"
#include "runtime/comm/communicator.hpp"
#include "topology/shipped_topologies.hpp"

namespace {

using namespace canopy;

constexpr std::uint64_t kGuard = 64;  // bytes past each receive that must stay untouched
constexpr unsigned char kUnwritten = 0xEE;
constexpr std::uint64_t kAllreduceCount = 1028;

// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}

[[noreturn]] void usage(const std::string& why) {
  fmt::print(stderr, "canopy_p2p_check: {}\n", why);
  std::exit(2);
}

// One message of a group: the k-th from sender to receiver.
struct Message {
  int sender = 0;
  int receiver = 0;
  int k = 0;
};

std::vector<Message> messages_of(const std::string& pattern, int n) {
  std::vector<Message> m;
  if (pattern == "ring") {
    for (int r = 0; r < n; ++r) m.push_back({r, (r + 1) % n, 0});
  } else if (pattern == "pairs") {  // r with r ^ 1; an odd count's last rank sends to itself
    for (int r = 0; r < n; ++r) m.push_back({r, (r ^ 1) < n ? r ^ 1 : r, 0});
  } else if (pattern == "self") {
    for (int r = 0; r < n; ++r) m.push_back({r, r, 0});
  } else if (pattern == "twice") {  // two sends to the previous rank: the k-th meets the k-th
    for (int k = 0; k < 2; ++k)
      for (int r = 0; r < n; ++r) m.push_back({r, (r + n - 1) % n, k});
  } else if (pattern == "alltoall" || pattern == "alltoall-call") {
    for (int s = 0; s < n; ++s)
      for (int r = 0; r < n; ++r) m.push_back({s, r, 0});
  } else {
    usage(fmt::format("--patterns: '{}' is not ring, pairs, self, twice, alltoall or alltoall-call", pattern));
  }
  return m;
}

unsigned char pattern_byte(const Message& m, std::uint64_t j) {
  return static_cast<unsigned char>(m.sender * 31 + m.receiver * 17 + m.k * 7 + j * 13 + 1);
}

struct Args {
  int per_process = 1;
  std::vector<std::string> patterns = {"ring", "pairs", "self", "twice", "alltoall", "alltoall-call"};
  std::vector<DataType> dtypes = {DataType::f32, DataType::bf16, DataType::f16, DataType::i64, DataType::u8};
  std::vector<std::uint64_t> counts = {0, 1, 7, 1028, 65540, 3000004};
  bool refusals = false;
  bool ungrouped = false;
  bool mismatch = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage(k + " needs a value");
    const std::string v = argv[++i];
    if (k == "--per-process") {
      a.per_process = std::atoi(v.c_str());
    } else if (k == "--patterns") {
      a.patterns = split(v);
      for (const std::string& p : a.patterns) (void)messages_of(p, 2);
    } else if (k == "--dtypes") {
      a.dtypes.clear();
      for (const std::string& d : split(v)) {
        const std::optional<DataType> t = parse_data_type(d);
        if (!t) usage(fmt::format("--dtypes: '{}' is not a dtype; use {}", d, data_type_choices()));
        a.dtypes.push_back(*t);
      }
    } else if (k == "--counts") {
      a.counts.clear();
      for (const std::string& c : split(v)) a.counts.push_back(std::strtoull(c.c_str(), nullptr, 10));
    } else if (k == "--refusals") {
      a.refusals = v == "1";
    } else if (k == "--ungrouped") {
      a.ungrouped = v == "1";
    } else if (k == "--mismatch") {
      a.mismatch = v == "1";
    } else {
      usage(fmt::format("unknown option {}", k));
    }
  }
  if (a.per_process < 1) usage("--per-process must be at least 1");
  if (a.ungrouped && a.patterns != std::vector<std::string>{"ring"})
    usage("--ungrouped 1 takes --patterns ring (other patterns may deadlock outside a group, as in NCCL)");
  if (a.ungrouped && a.per_process > 1)
    usage("--ungrouped 1 takes one rank a process (a send between ranks of one process needs its receive in its "
          "group)");
  return a;
}

// Device memory freed at scope end.
struct DeviceBytes {
  void* p = nullptr;
  explicit DeviceBytes(std::uint64_t bytes) {
    if (bytes && cudaMalloc(&p, bytes) != cudaSuccess) p = nullptr;
  }
  ~DeviceBytes() { cudaFree(p); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  char* bytes() const { return static_cast<char*>(p); }
};

class Checker {
 public:
  Checker(Communicator& comm, int process, int first, int own, std::vector<cudaStream_t> streams, bool ungrouped)
      : comm_(comm), process_(process), first_(first), own_(own), streams_(std::move(streams)), ungrouped_(ungrouped) {}

  bool mine(int rank) const { return rank >= first_ && rank < first_ + own_; }
  cudaStream_t stream(int rank) const { return streams_[rank - first_]; }

  // One group of `messages` (`count` of `dtype` each) through buffers of `slot` bytes per message; its wrong bytes.
  // `call`: the messages are an all-to-all made by alltoall_ops (as ncclAlltoAll is), each rank's blocks laid end to
  // end in its own n slots' room, which across processes runs on the all-to-all kernels.
  void group(const std::vector<Message>& messages, std::uint64_t count, DataType dtype, std::uint64_t slot,
             char* send, char* recv, const std::string& what, bool call = false) {
    const std::uint64_t bytes = count * static_cast<std::uint64_t>(size_of(dtype));
    const std::uint64_t n = static_cast<std::uint64_t>(comm_.ranks());
    // Message i's place in the sender's and the receiver's buffers, and how many bytes past it are checked untouched
    // (in the call's layout, past a receiver's last block only: the others are followed by the next block).
    const auto sent_at = [&](std::size_t i) {
      return call ? send + messages[i].sender * n * slot + messages[i].receiver * bytes : send + i * slot;
    };
    const auto received_at = [&](std::size_t i) {
      return call ? recv + messages[i].receiver * n * slot + messages[i].sender * bytes : recv + i * slot;
    };
    const auto guard = [&](std::size_t i) {
      return !call || static_cast<std::uint64_t>(messages[i].sender) == n - 1 ? kGuard : 0;
    };
    std::vector<unsigned char> host(slot);
    for (std::size_t i = 0; i < messages.size(); ++i) {
      if (!mine(messages[i].sender)) continue;
      for (std::uint64_t j = 0; j < bytes; ++j) host[j] = pattern_byte(messages[i], j);
      if (!cuda_ok(cudaMemcpy(sent_at(i), host.data(), bytes, cudaMemcpyHostToDevice), what)) return;
    }
    if (!cuda_ok(cudaMemset(recv, kUnwritten, slot * messages.size()), what)) return;
    if (!cuda_ok(cudaDeviceSynchronize(), what)) return;  // the streams are non-blocking
    std::vector<PointToPoint> ops;
    for (int r = first_; call && r < first_ + own_; ++r) {
      const std::vector<PointToPoint> part = alltoall_ops(BlockCall{r, static_cast<int>(n), 0, send + r * n * slot,
                                                                    recv + r * n * slot, count, dtype, stream(r)});
      ops.insert(ops.end(), part.begin(), part.end());
    }
    for (std::size_t i = 0; !call && i < messages.size(); ++i) {
      const Message& m = messages[i];
      if (mine(m.sender)) ops.push_back(send_op(m.sender, send + i * slot, count, dtype, m.receiver, stream(m.sender)));
      if (mine(m.receiver))
        ops.push_back(recv_op(m.receiver, recv + i * slot, count, dtype, m.sender, stream(m.receiver)));
    }
    if (process_ % 2)
      std::stable_partition(ops.begin(), ops.end(),
                            [](const PointToPoint& op) { return op.kind == PointToPointKind::recv; });
    // Grouped: the ops in one send_recv (a process with none makes an empty one). Ungrouped: each op a call of its
    // own, in the same order, through Communicator::send and recv, as a lone ncclSend and ncclRecv.
    const auto failed = [&](const Status& s) {
      ++failed_;
      fmt::print("process {}: {}: send_recv failed: {}\n", process_, what, s.message());
    };
    if (!ungrouped_) {
      ++calls_;
      if (const Status s = comm_.send_recv(ops); !s.ok()) return failed(s);
    } else {
      for (const PointToPoint& op : ops) {
        ++calls_;
        const Status s = op.kind == PointToPointKind::send
                             ? comm_.send(op.rank, op.buffer, op.count, op.dtype, op.peer, op.stream)
                             : comm_.recv(op.rank, op.buffer, op.count, op.dtype, op.peer, op.stream);
        if (!s.ok()) return failed(s);
      }
    }
    for (cudaStream_t st : streams_)
      if (!cuda_ok(cudaStreamSynchronize(st), what)) return;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      if (!mine(messages[i].receiver)) continue;
      if (!cuda_ok(cudaMemcpy(host.data(), received_at(i), bytes + guard(i), cudaMemcpyDeviceToHost), what)) return;
      std::uint64_t bad = 0;
      for (std::uint64_t j = 0; j < bytes + guard(i); ++j) {
        const unsigned char want = j < bytes ? pattern_byte(messages[i], j) : kUnwritten;
        if (host[j] != want && bad++ < 3)
          fmt::print("process {}: {}: message {} (rank {}'s send {} to rank {}): byte {} is {:#x}, want {:#x}\n",
                     process_, what, i, messages[i].sender, messages[i].k, messages[i].receiver, j, host[j], want);
      }
      checked_ += bytes + guard(i);
      wrong_ += bad;
    }
  }

  // An allreduce (f32 sum) on the first own rank's stream (a collective takes one stream per GPU, and the process's
  // ranks share its GPU): rank r holds r + 1 + (j % 5) at element j.
  void allreduce(char* in, char* out, const std::string& what) {
    const int n = comm_.ranks();
    const std::uint64_t bytes = kAllreduceCount * sizeof(float);
    std::vector<float> host(kAllreduceCount);
    std::vector<const void*> send;
    std::vector<void*> recv;
    for (int i = 0; i < own_; ++i) {
      for (std::uint64_t j = 0; j < kAllreduceCount; ++j) host[j] = static_cast<float>(first_ + i + 1 + j % 5);
      if (!cuda_ok(cudaMemcpy(in + i * bytes, host.data(), bytes, cudaMemcpyHostToDevice), what)) return;
      send.push_back(in + i * bytes);
      recv.push_back(out + i * bytes);
    }
    if (!cuda_ok(cudaDeviceSynchronize(), what)) return;
    ++calls_;
    const std::vector<cudaStream_t> one_stream(own_, streams_[0]);
    if (const Status s = comm_.allreduce(send, recv, kAllreduceCount, DataType::f32, ReduceOp::sum, one_stream);
        !s.ok()) {
      ++failed_;
      fmt::print("process {}: {}: allreduce after failed: {}\n", process_, what, s.message());
      return;
    }
    for (cudaStream_t st : streams_)
      if (!cuda_ok(cudaStreamSynchronize(st), what)) return;
    for (int i = 0; i < own_; ++i) {
      if (!cuda_ok(cudaMemcpy(host.data(), out + i * bytes, bytes, cudaMemcpyDeviceToHost), what)) return;
      std::uint64_t bad = 0;
      for (std::uint64_t j = 0; j < kAllreduceCount; ++j) {
        const float want = static_cast<float>(n * (n + 1) / 2 + n * static_cast<int>(j % 5));
        if (host[j] != want && bad++ < 3)
          fmt::print("process {}: {}: allreduce after: rank {} element {} is {}, want {}\n", process_, what,
                     first_ + i, j, host[j], want);
      }
      checked_ += kAllreduceCount;
      wrong_ += bad;
    }
  }

  // A group this process must refuse with invalid_argument and a message holding `expect`; nothing moves.
  void refused(const std::vector<PointToPoint>& ops, const std::string& expect, const std::string& what) {
    ++calls_;
    const Status s = comm_.send_recv(ops);
    if (s.code() == StatusCode::invalid_argument && s.message().find(expect) != std::string::npos) {
      fmt::print("process {}: {}: refused as expected: {}\n", process_, what, s.message());
      return;
    }
    ++failed_;
    fmt::print("process {}: {}: expected a refusal holding \"{}\", got {}: {}\n", process_, what, expect,
               s.ok() ? "ok" : "an error", s.message());
  }

  bool cuda_ok(cudaError_t e, const std::string& what) {
    if (e == cudaSuccess) return true;
    ++failed_;
    fmt::print("process {}: {}: CUDA: {}\n", process_, what, cudaGetErrorString(e));
    return false;
  }

  // After a group that failed the communicator: within 60 s this process sees it fail, through a later allreduce or
  // the asynchronous error, and no stream hangs. The message seen.
  std::string failure_seen(char* in, char* out) {
    const std::vector<const void*> send(own_, in);
    const std::vector<void*> recv(own_, out);
    const std::vector<cudaStream_t> one_stream(own_, streams_[0]);
    for (int tries = 0; tries < 600; ++tries) {
      const Status s = comm_.allreduce(send, recv, kAllreduceCount, DataType::f32, ReduceOp::sum, one_stream);
      for (cudaStream_t st : streams_) (void)cudaStreamSynchronize(st);
      if (!s.ok()) return s.message();
      if (const Status e = comm_.async_error(); !e.ok()) return e.message();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return "";
  }

  std::uint64_t calls_ = 0, checked_ = 0, wrong_ = 0, failed_ = 0;

 private:
  Communicator& comm_;
  int process_, first_, own_;
  std::vector<cudaStream_t> streams_;
  bool ungrouped_ = false;
};

int run(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const char* rank_env = std::getenv("CANOPY_RANK");
  const char* nranks_env = std::getenv("CANOPY_NRANKS");
  if (!rank_env || !nranks_env) usage("start it with `canopy run -n N -- canopy_p2p_check ...`");
  const int process = std::atoi(rank_env);
  const int processes = std::atoi(nranks_env);
  UniqueId id;
  if (Status s = parse_unique_id(std::getenv("CANOPY_UNIQUE_ID") ? std::getenv("CANOPY_UNIQUE_ID") : "", &id); !s.ok())
    usage("CANOPY_UNIQUE_ID: " + s.message());
  const int nranks = processes * a.per_process;
  const int first = process * a.per_process;
  CommunicatorOptions o;
  o.topology = load_topology("hgx-h100");
  for (int r = 0; r < nranks; ++r) o.gpus.push_back(std::to_string(r));
  std::unique_ptr<Communicator> comm;
  if (Status s = Communicator::join(id, nranks, first, o, &comm, a.per_process); !s.ok()) {
    fmt::print(stderr, "process {}: join failed: {}\n", process, s.message());
    return 1;
  }
  std::vector<cudaStream_t> streams(a.per_process);
  for (cudaStream_t& s : streams)
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 1;
  Checker check(*comm, process, first, a.per_process, streams, a.ungrouped);
  std::uint64_t most = 1;
  for (std::uint64_t c : a.counts) most = std::max(most, c);
  const std::uint64_t slot = most * 8 + kGuard;  // the largest type is 8 bytes
  std::size_t messages = 1;
  for (const std::string& p : a.patterns) messages = std::max(messages, messages_of(p, nranks).size());
  DeviceBytes send(slot * messages), recv(slot * messages);
  DeviceBytes reduce_in(kAllreduceCount * sizeof(float) * a.per_process);
  DeviceBytes reduce_out(kAllreduceCount * sizeof(float) * a.per_process);
  if (!send.p || !recv.p || !reduce_in.p || !reduce_out.p) {
    fmt::print(stderr, "process {}: cannot allocate 2 x {} bytes\n", process, slot * messages);
    return 1;
  }
  if (a.mismatch) {
    // Rank 0 sends 8 f32 to the last rank, which receives 9: whichever posts second refuses, naming both.
    std::vector<PointToPoint> differ;
    if (check.mine(0)) differ.push_back(send_op(0, send.bytes(), 8, DataType::f32, nranks - 1, streams[0]));
    if (check.mine(nranks - 1))
      differ.push_back(recv_op(nranks - 1, recv.bytes(), 9, DataType::f32, 0, streams[nranks - 1 - first]));
    const Status posted = comm->send_recv(differ);
    const bool named = posted.message().find("gives 8 f32") != std::string::npos &&
                       posted.message().find("gives 9 f32") != std::string::npos;
    if (!posted.ok() && !(posted.code() == StatusCode::invalid_argument && named)) {
      fmt::print("process {}: mismatch: refused without naming both sides: {}\n", process, posted.message());
      return 1;
    }
    if (!posted.ok()) fmt::print("process {}: mismatch: refused as expected: {}\n", process, posted.message());
    const std::string seen = check.failure_seen(reduce_in.bytes(), reduce_out.bytes());
    if (seen.empty()) {
      fmt::print("process {}: mismatch: the communicator did not fail within 60 s\n", process);
      return 1;
    }
    fmt::print("process {}: mismatch: the communicator failed as expected: {}\n", process, seen);
    for (cudaStream_t s : streams) cudaStreamDestroy(s);
    return 0;
  }
  if (a.refusals) {
    // An op of another process's rank: this process refuses it alone, nothing posted.
    const int other = (first + a.per_process) % nranks;
    const std::vector<PointToPoint> foreign = {send_op(other, send.bytes(), 4, DataType::f32, first, streams[0])};
    check.refused(foreign, "each process passes only its own ranks' ops", "another process's rank");
    // A null buffer with elements, to a rank of the next process.
    const std::vector<PointToPoint> null_buffer = {recv_op(first, nullptr, 4, DataType::f32, other, streams[0])};
    check.refused(null_buffer, "has a null buffer and count 4", "a null buffer");
  }
  for (const std::string& pattern : a.patterns)
    for (DataType dtype : a.dtypes)
      for (std::uint64_t count : a.counts) {
        const std::string what = fmt::format("{} {} count {}", pattern, to_string(dtype), count);
        if (process == 0) fmt::print("process 0: {}\n", what);
        check.group(messages_of(pattern, nranks), count, dtype, slot, send.bytes(), recv.bytes(), what,
                    pattern == "alltoall-call");
        check.allreduce(reduce_in.bytes(), reduce_out.bytes(), what);
      }
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
  fmt::print("process {} (ranks {}..{} of {}): {} calls, {} values checked, {} wrong, {} failed calls\n", process,
             first, first + a.per_process - 1, nranks, check.calls_, check.checked_, check.wrong_, check.failed_);
  return check.wrong_ || check.failed_ ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
