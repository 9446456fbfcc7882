// The factory: Communicator::create, join and split, the one place that picks a way of running (comm/call_path.hpp).
// create drives every GPU from this process (LocalCallPath, local/). join starts alike for every process (start_join:
// the bootstrap group and every process's facts), then the facts decide: processes on one host (ProcessCallPath,
// processes/), or on several hosts (HostsCallPath, hosts/: each host's processes joined through this same join). A
// split's new communicators are joins too.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "core/error.hpp"
#include "runtime/comm/call_path.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/factory/start_join.hpp"
#include "runtime/hosts/hosts_call_path.hpp"
#include "runtime/local/local_call_path.hpp"
#include "runtime/processes/process_call_path.hpp"

namespace canopy {

namespace {

// The logger of a new communicator: the environment's, writing to the options' sink where one is given.
Logger logger_for(const CommunicatorOptions& options) {
  Logger log = Logger::from_environment();
  if (options.log_sink) log.set_sink(options.log_sink);
  return log;
}

// canopy::Error and InternalError thrown by set-up steps become Statuses.
template <class Steps>
Status guarded(Steps&& steps) {
  try {
    return steps();
  } catch (const Error& e) {
    return Status(StatusCode::invalid_argument, e.what());
  } catch (const InternalError& e) {
    return Status(StatusCode::internal, e.what());
  }
}

// This process's part of the communicator `id` names, on the way of running the processes' hosts decide.
Status join_path(const UniqueId& id, int nranks, int rank, const CommunicatorOptions& options, int own_ranks,
                 std::unique_ptr<CallPath>* out) {
  if (nranks < 1 || own_ranks < 1 || rank < 0 || rank + own_ranks > nranks)
    return Status(StatusCode::invalid_argument,
                  fmt::format("join as ranks {}..{} of {}: give 0 <= rank and rank + own_ranks <= nranks", rank,
                              rank + own_ranks - 1, nranks));
  if (options.devices.size() > 1)
    return Status(StatusCode::invalid_argument,
                  fmt::format("join takes one GPU per process, {} given: run one process per GPU (virtual ranks "
                              "share one GPU)",
                              options.devices.size()));
  if (!options.relays.empty() || !options.relay_devices.empty())
    return Status(StatusCode::unsupported,
                  fmt::format("relays ({}) are Communicator::create's (one process driving the ranks and the relays' "
                              "forwarding); joined processes cannot use them yet: leave relays out of the options",
                              fmt::join(options.relays, ",")));
  UniqueIdContents contents;
  if (Status s = decode_unique_id(id, &contents); !s.ok()) return s;
  const Logger log = logger_for(options);
  return guarded([&]() -> Status {
    JoinStart start;
    if (Status s = start_join(id, contents, nranks, rank, own_ranks, options, log, &start); !s.ok()) return s;
    if (several_hosts(start.group->facts)) {
      auto path = std::make_unique<HostsCallPath>(log);
      if (Status s = path->join(std::move(start), options, join_path); !s.ok()) return s;
      *out = std::move(path);
    } else {
      auto path = std::make_unique<ProcessCallPath>(log);
      if (Status s = path->join(std::move(start), options); !s.ok()) return s;
      *out = std::move(path);
    }
    return Status();
  });
}

}  // namespace

Status Communicator::create(const CommunicatorOptions& options, std::unique_ptr<Communicator>* out) {
  auto path = std::make_unique<LocalCallPath>(logger_for(options));
  if (Status s = guarded([&] {
        path->create(options);
        return Status();
      });
      !s.ok())
    return s;
  out->reset(new Communicator(std::move(path)));
  return Status();
}

Status Communicator::join(const UniqueId& id, int nranks, int rank, const CommunicatorOptions& options,
                          std::unique_ptr<Communicator>* out, int own_ranks) {
  std::unique_ptr<CallPath> path;
  if (Status s = join_path(id, nranks, rank, options, own_ranks, &path); !s.ok()) return s;
  out->reset(new Communicator(std::move(path)));
  return Status();
}

Status Communicator::split(int color, int key, std::unique_ptr<Communicator>* out, const CommunicatorOptions& options) {
  out->reset();
  std::unique_ptr<CallPath> child;
  if (Status s = path_->split(color, key, options, join_path, &child); !s.ok()) return s;
  if (child) out->reset(new Communicator(std::move(child)));
  return Status();
}

}  // namespace canopy
