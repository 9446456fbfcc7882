// make_unique_id and the process-wide registry of the bootstrap roots it started (declared in unique_id.hpp). A
// root's thread ends by itself; the registry joins finished ones at the next make_unique_id and the rest at exit.
#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>

#include "core/error.hpp"
#include "runtime/transport/bootstrap/bootstrap_root.hpp"
#include "runtime/transport/bootstrap/root_address.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy {

namespace {
struct RootRegistry {
  std::mutex mutex;
  std::map<std::array<unsigned char, 128>, std::shared_ptr<BootstrapRoot>> roots;  // by UniqueId bytes
};

RootRegistry& root_registry() {
  static RootRegistry registry;
  return registry;
}
}  // namespace

Status make_unique_id(UniqueId* out, const BootstrapOptions& options) {
  if (!out) return Status(StatusCode::invalid_argument, "make_unique_id: `out` is null: pass a UniqueId to fill");
  try {
    const BootstrapSettings settings = settle(options);
    const ListenChoice where = bootstrap_listen_address();
    UniqueIdContents contents;
    if (Status s = random_secret(&contents.secret); !s.ok()) return s;
    std::unique_ptr<BootstrapRoot> root;
    if (Status s = BootstrapRoot::start(where.address, contents.secret, settings, &root); !s.ok()) return s;
    contents.root = root->address();
    const UniqueId id = encode_unique_id(contents);
    settings.logger.info(LogSubsys::init,
                         fmt::format("bootstrap root listening on {} ({})", to_string(contents.root), where.why));
    RootRegistry& registry = root_registry();
    std::lock_guard lock(registry.mutex);
    std::erase_if(registry.roots, [](const auto& r) { return r.second->wait_finished(std::chrono::milliseconds(0)); });
    registry.roots[id.bytes] = std::move(root);
    *out = id;
    return {};
  } catch (const Error& e) {
    return Status(StatusCode::invalid_argument, e.what());
  }
}

bool wait_for_bootstrap_root(const UniqueId& id, std::chrono::milliseconds wait) {
  std::shared_ptr<BootstrapRoot> root;
  {
    RootRegistry& registry = root_registry();
    std::lock_guard lock(registry.mutex);
    const auto r = registry.roots.find(id.bytes);
    if (r == registry.roots.end()) return true;
    root = r->second;
  }
  return root->wait_finished(wait);
}

void retire_bootstrap_root(const UniqueId& id) {
  std::shared_ptr<BootstrapRoot> root;
  {
    RootRegistry& registry = root_registry();
    std::lock_guard lock(registry.mutex);
    const auto r = registry.roots.find(id.bytes);
    if (r == registry.roots.end()) return;
    root = std::move(r->second);
    registry.roots.erase(r);
  }
  // Destroyed here, outside the lock: its destructor stops the listener and joins its thread.
}

}  // namespace canopy
