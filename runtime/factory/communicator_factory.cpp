// The factory: Communicator::create, join and split, the one place that picks a way of running (comm/call_path.hpp).
// create drives every GPU from this process (local/); join and split make this process's part of a communicator
// across processes.
#include <memory>

#include "core/error.hpp"
#include "runtime/comm/call_path.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/communicator_state.hpp"
#include "runtime/local/local_call_path.hpp"

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
  if (Status s = join_legacy(id, nranks, rank, options, own_ranks, &path); !s.ok()) return s;
  out->reset(new Communicator(std::move(path)));
  return Status();
}

Status Communicator::split(int color, int key, std::unique_ptr<Communicator>* out, const CommunicatorOptions& options) {
  out->reset();
  std::unique_ptr<CallPath> child;
  if (Status s = path_->split(color, key, options, join_legacy, &child); !s.ok()) return s;
  if (child) out->reset(new Communicator(std::move(child)));
  return Status();
}

}  // namespace canopy
