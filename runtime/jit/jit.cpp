// Jit: see jit.hpp.
#include "runtime/jit/jit.hpp"

#include <cstdlib>
#include <exception>

#include "codegen/template_bundle.hpp"
#include "runtime/jit/cache_key.hpp"

namespace canopy {

std::string to_string(CacheOutcome outcome) {
  switch (outcome) {
    case CacheOutcome::memory_hit: return "in-process hit";
    case CacheOutcome::disk_hit: return "disk hit";
    case CacheOutcome::compiled: return "miss, compiled";
  }
  return "?";
}

namespace {
// The index's key: the caller's key with everything of the options that changes the binary.
std::string index_key(const std::string& lookup_key, const CompileOptions& options) {
  std::string key = lookup_key;
  key += '\x1f';
  key += options.arch;
  key += options.keep_ptx ? "\x1fptx" : "\x1f";
  for (const std::string& o : options.extra_options) (key += '\x1f') += o;
  return key;
}
// map[key], made once across threads: the first to ask runs `make` while the others wait for its value (or its
// error, which they rethrow); a failure is not remembered, so the next to ask tries again. Locks `mutex` around the
// map.
template <class T>
T make_once(std::mutex& mutex, std::unordered_map<std::string, std::shared_future<T>>& map, const std::string& key,
            const std::function<T()>& make) {
  std::promise<T> promise;
  std::shared_future<T> entry;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto [it, inserted] = map.try_emplace(key);
    if (inserted) it->second = promise.get_future().share();
    entry = it->second;
    mine = inserted;
  }
  if (!mine) return entry.get();
  try {
    T value = make();
    promise.set_value(value);
    return value;
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      map.erase(key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

}  // namespace

Jit::Jit(DiskCache disk) : disk_(std::move(disk)) {
  const char* always = std::getenv("CANOPY_ALWAYS_COMPILE");
  always_compile_ = always && std::string(always) == "1";
}

Jit::Built Jit::cache(BuiltCollective generated, const CompileOptions& options, CacheOutcome* outcome) {
  const std::vector<SourceFile>& headers = template_headers();
  const std::string key = compile_cache_key(generated.source.file, headers, options);
  generated.cache_key = key;
  CacheOutcome how = CacheOutcome::memory_hit;  // unless this thread compiles it
  auto compile = [&] {
    bool hit = false;
    const SourceFile& source = generated.source.file;
    const auto run_nvrtc = [&] { return compile_cuda(source, headers, options); };
    generated.module = std::make_shared<const CompiledModule>(
        always_compile_ ? run_nvrtc() : disk_.load_or_compile(key, source.name, options.arch, run_nvrtc, &hit));
    how = hit ? CacheOutcome::disk_hit : CacheOutcome::compiled;
    return std::make_shared<const BuiltCollective>(std::move(generated));
  };
  Built built = always_compile_ ? compile() : make_once<Built>(mutex_, kernels_, key, compile);
  if (outcome) *outcome = how;
  return built;
}

Jit::Built Jit::filed(const std::string& key) {
  std::shared_future<Built> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    entry = kernels_.at(key);
  }
  return entry.get();
}

std::shared_ptr<const CompiledModule> Jit::get(const std::string& lookup_key,
                                               const std::function<SourceFile()>& make_source,
                                               const CompileOptions& options, CacheOutcome* outcome,
                                               std::string* cache_key) {
  auto generate_and_cache = [&] {
    BuiltCollective b;
    b.inputs_key = lookup_key;
    b.source.file = make_source();
    return cache(std::move(b), options, outcome);
  };
  Built built;
  if (always_compile_) {
    built = generate_and_cache();
  } else {
    bool generated = false;  // else generated before, or by another thread: its key is in the index
    const std::string key = make_once<std::string>(
        mutex_, index_, index_key(lookup_key, options),
        [&] {
          generated = true;
          return generate_and_cache()->cache_key;
        });
    built = filed(key);
    if (!generated && outcome) *outcome = CacheOutcome::memory_hit;
  }
  if (cache_key) *cache_key = built->cache_key;
  return built->module;
}

std::shared_ptr<const BuiltCollective> Jit::find(const std::string& lookup_key, const CompileOptions& options) {
  if (always_compile_) return nullptr;
  std::shared_future<std::string> key;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = index_.find(index_key(lookup_key, options));
    if (it == index_.end()) return nullptr;
    key = it->second;
  }
  try {
    return filed(key.get());
  } catch (const std::exception&) {
    return nullptr;  // its generation failed: not built
  }
}

std::shared_ptr<const BuiltCollective> Jit::compile(const std::string& lookup_key, BuiltCollective generated,
                                                    const CompileOptions& options, CacheOutcome* outcome) {
  generated.inputs_key = lookup_key;
  const Built built = cache(std::move(generated), options, outcome);
  if (!always_compile_) {
    std::promise<std::string> key;
    key.set_value(built->cache_key);
    std::lock_guard<std::mutex> lock(mutex_);
    index_.try_emplace(index_key(lookup_key, options), key.get_future().share());
  }
  return built;
}

}  // namespace canopy
