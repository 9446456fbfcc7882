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

Jit::Jit(DiskCache disk) : disk_(std::move(disk)) {
  const char* always = std::getenv("CANOPY_ALWAYS_COMPILE");
  always_compile_ = always && std::string(always) == "1";
}

std::shared_ptr<const CompiledModule> Jit::get(const std::string& lookup_key,
                                               const std::function<SourceFile()>& make_source,
                                               const CompileOptions& options, CacheOutcome* outcome,
                                               std::string* cache_key) {
  const std::vector<SourceFile>& headers = template_headers();
  if (always_compile_) {
    const SourceFile source = make_source();
    if (cache_key) *cache_key = compile_cache_key(source, headers, options);
    if (outcome) *outcome = CacheOutcome::compiled;
    return std::make_shared<const CompiledModule>(compile_cuda(source, headers, options));
  }
  std::string memo_key = lookup_key;
  memo_key += '\x1f';
  memo_key += options.arch;
  memo_key += options.keep_ptx ? "\x1fptx" : "\x1f";
  for (const std::string& o : options.extra_options) (memo_key += '\x1f') += o;

  std::promise<Memo> promise;
  std::shared_future<Memo> made;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, inserted] = memory_.try_emplace(memo_key);
    if (inserted) it->second = promise.get_future().share();
    made = it->second;
    mine = inserted;
  }
  if (!mine) {  // made before, or being made by another thread: wait for it (rethrows its error)
    const Memo& memo = made.get();
    if (outcome) *outcome = CacheOutcome::memory_hit;
    if (cache_key) *cache_key = memo.cache_key;
    return memo.module;
  }
  try {
    const SourceFile source = make_source();
    const std::string key = compile_cache_key(source, headers, options);
    bool hit = false;
    auto module = std::make_shared<const CompiledModule>(disk_.load_or_compile(
        key, source.name, options.arch, [&] { return compile_cuda(source, headers, options); }, &hit));
    promise.set_value(Memo{module, key});
    if (outcome) *outcome = hit ? CacheOutcome::disk_hit : CacheOutcome::compiled;
    if (cache_key) *cache_key = key;
    return module;
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      memory_.erase(memo_key);  // not remembered: the next call tries again
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

}  // namespace canopy
