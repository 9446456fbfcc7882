// Jit: see jit.hpp.
#include "runtime/jit.hpp"

#include <cstdlib>

#include "codegen/template_bundle.hpp"
#include "runtime/cache_key.hpp"

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
  std::string memo_key = lookup_key;
  memo_key += '\x1f';
  memo_key += options.arch;
  memo_key += options.keep_ptx ? "\x1fptx" : "\x1f";
  for (const std::string& o : options.extra_options) (memo_key += '\x1f') += o;
  if (!always_compile_) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = memory_.find(memo_key); it != memory_.end()) {
      if (outcome) *outcome = CacheOutcome::memory_hit;
      if (cache_key) *cache_key = it->second.cache_key;
      return it->second.module;
    }
  }
  const SourceFile source = make_source();
  const std::vector<SourceFile>& headers = template_headers();
  const std::string key = compile_cache_key(source, headers, options);
  std::shared_ptr<const CompiledModule> module;
  if (always_compile_) {
    module = std::make_shared<CompiledModule>(compile_cuda(source, headers, options));
    if (outcome) *outcome = CacheOutcome::compiled;
  } else {
    bool hit = false;
    module = std::make_shared<CompiledModule>(disk_.load_or_compile(
        key, source.name, options.arch, [&] { return compile_cuda(source, headers, options); }, &hit));
    if (outcome) *outcome = hit ? CacheOutcome::disk_hit : CacheOutcome::compiled;
    std::lock_guard<std::mutex> lock(mutex_);
    memory_.emplace(memo_key, Memo{module, key});
  }
  if (cache_key) *cache_key = key;
  return module;
}

}  // namespace canopy
