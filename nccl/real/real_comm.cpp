// The real NCCL communicator beside Canopy's: facts, decision, and making it (real_comm.hpp).
#include "nccl/real/real_comm.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <sstream>

#include "nccl/base/last_error.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "nccl/comm/shared_comm.hpp"
#include "nccl/real/real_nccl.hpp"

namespace canopy::nccl_api {

namespace {

std::string gpu_uuid(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return fmt::format("device{}", device);
  }
  std::string hex;
  for (char c : prop.uuid.bytes) hex += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return hex;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}

// What on `comm`'s rank would use a real communicator: calls CANOPY_NCCL_FORWARD names, or point-to-point Canopy does
// not serve there.
std::string use_of(ncclComm* comm) {
  if (!comm->forward.empty()) return "CANOPY_NCCL_FORWARD names calls to pass to it";
  if (std::optional<std::string> refusal = comm->shared ? comm->shared->point_to_point_refusal() : std::nullopt)
    return one_line("point-to-point: " + *refusal);
  return "";
}

// This communicator's library choices (tuning.json's, for its machine), or null where it has none; an unreadable
// file is said and ignored.
std::shared_ptr<const LibraryChoices> read_choices(ncclComm* comm) {
  if (!comm->shared) return nullptr;
  const Communicator& canopy = comm->shared->communicator();
  std::string warning;
  const TuningFile file(canopy.tuning_path(), &warning);
  if (!warning.empty()) comm->shared->log().logger().info(LogSubsys::init, "nccl: " + warning);
  auto choices = std::make_shared<const LibraryChoices>(file, canopy.machine_key());
  return choices->empty() ? nullptr : choices;
}

RealCommFacts my_facts(int device) {
  RealCommFacts f;
  f.loaded = real_nccl_loaded();
  f.why_not = one_line(real_nccl_why_not());
  if (Status s = real_mode_from_environment(&f.mode); !s.ok()) f.mode = RealMode::automatic;  // checked at init
  f.gpu = gpu_uuid(device);
  if (const char* h = std::getenv("NCCL_HOSTID")) f.host_id = one_line(h);
  return f;
}

// The real NCCL's config for its init: the user's, blocking (it runs on the init's own thread).
ncclConfig_t blocking_config(const ncclConfig_t& user) {
  ncclConfig_t c = user;
  c.blocking = 1;
  return c;
}

std::string real_error(ncclResult_t r, ncclComm_t real) {
  std::string text = fmt::format("code {}", static_cast<int>(r));
  if (auto f = real_nccl<const char* (*)(ncclResult_t)>("ncclGetErrorString")) text += fmt::format(" ({})", f(r));
  if (auto f = real_nccl<const char* (*)(ncclComm_t)>("ncclGetLastError"))
    if (const char* m = f(real); m && *m) text += fmt::format(": {}", m);
  return text;
}

void say(ncclComm* comm, const std::string& text) {
  if (comm->shared) comm->shared->log().logger().info(LogSubsys::init, "nccl: " + text);
}

}  // namespace

std::string encode_real_facts(const RealCommFacts& f) {
  return fmt::format("loaded={}\nmode={}\ngpu={}\nhostid={}\nwhy={}\nuse={}\nchoices={}\nchosen={}", f.loaded ? 1 : 0,
                     to_string(f.mode), f.gpu, f.host_id, f.why_not, f.use, f.choices, f.chosen);
}

Status decode_real_facts(const std::string& text, RealCommFacts* out) {
  RealCommFacts f;
  std::istringstream in(text);
  std::string line;
  int seen = 0;
  while (std::getline(in, line)) {
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "loaded") f.loaded = value == "1", ++seen;
    else if (key == "mode") {
      if (Status s = parse_real_mode(value, &f.mode); !s.ok()) return s;
      ++seen;
    } else if (key == "gpu") f.gpu = value, ++seen;
    else if (key == "hostid") f.host_id = value;
    else if (key == "why") f.why_not = value;
    else if (key == "use") f.use = value;
    else if (key == "choices") f.choices = value;
    else if (key == "chosen") f.chosen = std::atoi(value.c_str());
  }
  if (seen != 3)
    return Status(StatusCode::remote_error,
                  fmt::format("a rank's facts for the real NCCL communicator are malformed: '{}'", text));
  *out = f;
  return Status();
}

RealCommDecision decide_real_comm(const std::vector<RealCommFacts>& ranks) {
  RealCommDecision d;
  for (const RealCommFacts& f : ranks) d.choices_agree = d.choices_agree && f.choices == ranks.front().choices;
  bool required = false;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].mode == RealMode::off) {
      d.why_not = fmt::format("CANOPY_NCCL_REAL=0 on rank {}", r);
      return d;
    }
    required = required || ranks[r].mode == RealMode::required;
  }
  bool used = required;
  for (const RealCommFacts& f : ranks) used = used || !f.use.empty();
  // Library choices use it only where every rank holds the same.
  for (const RealCommFacts& f : ranks) used = used || (d.choices_agree && f.chosen > 0);
  if (!used) {
    d.why_not = std::string(kNothingUsesIt);
    return d;
  }
  for (std::size_t r = 0; r < ranks.size() && d.why_not.empty(); ++r)
    if (!ranks[r].loaded) d.why_not = fmt::format("rank {} found no real NCCL: {}", r, ranks[r].why_not);
  for (std::size_t a = 0; a < ranks.size() && d.why_not.empty(); ++a)
    for (std::size_t b = a + 1; b < ranks.size() && d.why_not.empty(); ++b)
      if (ranks[a].gpu == ranks[b].gpu && (ranks[a].host_id.empty() || ranks[a].host_id == ranks[b].host_id))
        d.why_not = fmt::format("ranks {} and {} share GPU {}, which NCCL 2.28 refuses unless each process sets its "
                                "own NCCL_HOSTID",
                                a, b, ranks[a].gpu.substr(0, 8));
  d.make = d.why_not.empty();
  d.fail_init = !d.make && required;
  return d;
}

ncclResult_t attach_real_comm(ncclComm* comm, const char* function) {
  Communicator& canopy = comm->shared->communicator();
  std::vector<std::string> all;
  RealCommFacts mine_facts = my_facts(comm->device);
  const std::shared_ptr<const LibraryChoices> choices = read_choices(comm);
  mine_facts.use = use_of(comm);
  mine_facts.choices = choices ? choices->digest() : "";
  mine_facts.chosen = choices ? choices->nccl_count() : 0;
  if (Status s = canopy.exchange(encode_real_facts(mine_facts), &all); !s.ok())
    return to_result(s, function);
  std::vector<RealCommFacts> facts(all.size());
  for (std::size_t p = 0; p < all.size(); ++p)
    if (Status s = decode_real_facts(all[p], &facts[p]); !s.ok()) return to_result(s, function);
  const RealCommDecision d = decide_real_comm(facts);
  if (d.choices_agree) {
    comm->choices = choices;
  } else {
    say(comm, fmt::format("tuning.json's library choices differ between ranks (rank {} holds {}): none applies, "
                          "Canopy serves every size; give every rank the same file (CANOPY_TUNING)",
                          comm->rank, choices ? choices->source().string() : "none"));
  }
  if (!d.make) {
    comm->real_why_not = d.why_not;
    say(comm, fmt::format("no real NCCL communicator beside Canopy's (rank {} of {}): {}", comm->rank, comm->nranks,
                          d.why_not));
    if (d.fail_init)
      return fail(ncclInvalidUsage, fmt::format("{}: CANOPY_NCCL_REAL=1 asks for a real NCCL communicator beside "
                                                "Canopy's and none can be made: {}",
                                                function, d.why_not));
    return ncclSuccess;
  }
  // Rank 0's real id reaches every rank through Canopy's communicator ("!" and why, when it could not make one).
  std::string mine;
  if (comm->rank == 0) {
    ncclUniqueId id{};
    auto get = real_nccl<ncclResult_t (*)(ncclUniqueId*)>("ncclGetUniqueId");
    const ncclResult_t r = get ? get(&id) : ncclSystemError;
    mine = r == ncclSuccess ? std::string(id.internal, sizeof id.internal)
                            : "!rank 0's real ncclGetUniqueId failed: " + real_error(r, nullptr);
  }
  if (Status s = canopy.exchange(mine, &all); !s.ok()) return to_result(s, function);
  std::string why;
  if (all[0].size() != sizeof(ncclUniqueId)) why = all[0].empty() ? "rank 0 sent no id" : all[0].substr(1);
  if (why.empty()) {
    ncclUniqueId id{};
    std::memcpy(id.internal, all[0].data(), sizeof id.internal);
    ncclConfig_t config = blocking_config(comm->config);
    int keep = 0;
    (void)cudaGetDevice(&keep);
    (void)cudaSetDevice(comm->device);
    auto init = real_nccl<ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*)>(
        "ncclCommInitRankConfig");
    ncclComm_t real = nullptr;
    const ncclResult_t r = init ? init(&real, comm->nranks, id, comm->rank, &config) : ncclSystemError;
    (void)cudaSetDevice(keep);
    if (r == ncclSuccess) comm->real = real;
    else why = "the real ncclCommInitRankConfig failed: " + real_error(r, real);
  }
  if (!why.empty()) {
    comm->real_why_not = why;
    say(comm, fmt::format("no real NCCL communicator beside Canopy's (rank {} of {}): {}", comm->rank, comm->nranks,
                          why));
    bool required = false;
    for (const RealCommFacts& f : facts) required = required || f.mode == RealMode::required;
    if (required)
      return fail(ncclInvalidUsage, fmt::format("{}: CANOPY_NCCL_REAL=1 asks for a real NCCL communicator beside "
                                                "Canopy's: {}",
                                                function, why));
    return ncclSuccess;
  }
  say(comm, fmt::format("real NCCL communicator made beside Canopy's (rank {} of {}, {})", comm->rank, comm->nranks,
                        real_nccl_path()));
  return ncclSuccess;
}

ncclResult_t attach_real_comms(const std::vector<ncclComm*>& comms, const std::vector<int>& devices,
                               const char* function) {
  const int n = static_cast<int>(devices.size());
  RealMode mode = RealMode::automatic;
  (void)real_mode_from_environment(&mode);
  auto none = [&](const std::string& why) {
    for (ncclComm* c : comms) c->real_why_not = why;
    say(comms[0], "no real NCCL communicator beside Canopy's (ncclCommInitAll): " + why);
    if (mode != RealMode::required) return ncclSuccess;
    return fail(ncclInvalidUsage, fmt::format("{}: CANOPY_NCCL_REAL=1 asks for a real NCCL communicator beside "
                                              "Canopy's: {}",
                                              function, why));
  };
  // One process: every rank reads the same choices.
  const std::shared_ptr<const LibraryChoices> choices = read_choices(comms[0]);
  for (ncclComm* c : comms) c->choices = choices;
  if (mode == RealMode::off) return none("CANOPY_NCCL_REAL=0");
  // One process: Canopy serves point-to-point here, so only forwarded calls, library choices or CANOPY_NCCL_REAL=1
  // would use one.
  if (mode == RealMode::automatic && comms[0]->forward.empty() && (!choices || choices->nccl_count() == 0))
    return none(std::string(kNothingUsesIt));
  if (!real_nccl_loaded()) return none(real_nccl_why_not());
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size())
    return none("several ranks share a GPU, which NCCL 2.28 refuses");
  auto init_all = real_nccl<ncclResult_t (*)(ncclComm_t*, int, const int*)>("ncclCommInitAll");
  std::vector<ncclComm_t> reals(n, nullptr);
  const ncclResult_t r = init_all ? init_all(reals.data(), n, devices.data()) : ncclSystemError;
  if (r != ncclSuccess) return none("the real ncclCommInitAll failed: " + real_error(r, nullptr));
  for (int k = 0; k < n; ++k) comms[k]->real = reals[k];
  say(comms[0], fmt::format("real NCCL communicator made beside Canopy's (ncclCommInitAll, {} ranks, {})", n,
                            real_nccl_path()));
  return ncclSuccess;
}

void split_real_comms_together(const std::vector<ncclComm*>& parents, const std::vector<std::pair<int, int>>& color_key,
                               const std::vector<ncclComm*>& children) {
  const std::size_t n = parents.size();
  const auto set_why = [&](const std::string& why) {
    for (ncclComm* c : children)
      if (c) c->real_why_not = why;
  };
  // A parent without one: its child says why; the others split (whether a communicator has one is the same on every
  // rank of it, so every process skips the same ones).
  std::vector<std::size_t> with_real;
  for (std::size_t k = 0; k < n; ++k) {
    if (parents[k]->real) with_real.push_back(k);
    else if (children[k])
      children[k]->real_why_not =
          parents[k]->real_why_not.empty() ? "the parent has no real NCCL communicator" : parents[k]->real_why_not;
  }
  if (with_real.empty()) return;
  auto start = real_nccl<ncclResult_t (*)()>("ncclGroupStart");
  auto end = real_nccl<ncclResult_t (*)()>("ncclGroupEnd");
  auto split = real_nccl<ncclResult_t (*)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*)>("ncclCommSplit");
  if (!start || !end || !split) return set_why("the real NCCL lacks ncclGroupStart, ncclGroupEnd or ncclCommSplit");
  // The real NCCL's handles of one process split together inside one of its groups (each would wait for the others).
  std::vector<ncclComm_t> reals(n, nullptr);
  std::vector<ncclConfig_t> configs(n);
  for (std::size_t k : with_real) configs[k] = blocking_config(parents[k]->config);
  ncclResult_t r = start();
  for (std::size_t i = 0; i < with_real.size() && r == ncclSuccess; ++i) {
    const std::size_t k = with_real[i];
    r = split(parents[k]->real, color_key[k].first, color_key[k].second, &reals[k], &configs[k]);
  }
  const ncclResult_t ended = end();
  if (r == ncclSuccess) r = ended;
  if (r != ncclSuccess) return set_why("the real ncclCommSplit failed: " + real_error(r, parents[with_real[0]]->real));
  for (std::size_t k : with_real)
    if (children[k]) children[k]->real = reals[k];
}

ncclResult_t end_real_comm(ncclComm* comm, const char* function) {
  if (!comm->real) return ncclSuccess;
  auto f = real_nccl<ncclResult_t (*)(ncclComm_t)>(function);
  const ncclResult_t r = f ? f(comm->real) : ncclSystemError;
  if (std::string(function) != "ncclCommFinalize") comm->real = nullptr;
  if (r != ncclSuccess)
    return fail(r, fmt::format("{}: the real NCCL communicator beside Canopy's: {}", function, real_error(r, nullptr)));
  return ncclSuccess;
}

}  // namespace canopy::nccl_api
