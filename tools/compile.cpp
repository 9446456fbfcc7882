// `canopy compile`: the kernel pipeline through NVRTC and the on-disk cache (plan -> schedule -> source -> module);
// one line per kernel entry: cache hit or miss, compile time, registers, spills (--stats: shared memory, stack, PTX).
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "codegen/template_bundle.hpp"
#include "core/error.hpp"
#include "runtime/jit/jit.hpp"
#include "tools/codegen_args.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_compile_command(CLI::App& app) {
  struct Args {
    CodegenArgs codegen;
    std::string arch = "sm_90";
    bool keep_ptx = false;
    bool stats = false;
    std::string ptx_out;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("compile", "generate a plan's (or a program's) kernel and compile it with NVRTC (cached)");
  add_codegen_args(*cmd, args->codegen);
  cmd->add_option("--arch", args->arch, "target GPU architecture, e.g. sm_90 (H100/H200), sm_80, sm_100")
      ->capture_default_str();
  cmd->add_flag("--keep-ptx", args->keep_ptx, "keep the PTX beside the binary in the cache entry");
  cmd->add_option("--ptx", args->ptx_out, "write the PTX to this file (implies --keep-ptx)");
  cmd->add_flag("--stats", args->stats, "also print shared memory, stack and the cache entry");
  cmd->footer(
      "Examples:\n"
      "  canopy compile -t dgx1-v100 -c allreduce                 miss the first time, hit after\n"
      "  canopy compile -t h200x2 -c allreduce --dtype bf16 --stats\n"
      "  canopy compile -t hgx-h200 -c allgather --arch sm_100 --ptx k.ptx\n"
      "  CANOPY_ALWAYS_COMPILE=1 canopy compile -t dgx2 -c broadcast   bypass the cache\n"
      "  canopy compile --algorithm ring-allreduce --ranks 8            a program (canopy algo list) instead of trees\n"
      "Takes every option of `canopy gen`. The cache lives in $CANOPY_CACHE_DIR (see `canopy cache info`).");
  cmd->callback([args] {
    CodegenRequest request;
    read_codegen_request(args->codegen, &request);
    request.kernel.compile.arch = args->arch;
    request.kernel.compile.keep_ptx = args->keep_ptx || !args->ptx_out.empty();
    Jit jit(DiskCache::from_environment());
    const BuiltKernel built = build_kernel(request.kernel, &jit);
    const BuiltCollective& g = *built.builds.front();
    const CacheOutcome outcome = built.outcome;
    const double ms = built.cache_ms;
    const std::shared_ptr<const CompiledModule>& module = g.module;
    const std::string& key = g.cache_key;
    const char* what = outcome == CacheOutcome::compiled ? "miss, compiled" : "hit";
    for (const KernelStats& s : module->kernels) {
      if (s.name != g.source.entry) continue;  // the entry; device functions are listed with --stats
      fmt::print("{}  {} in {:.0f} ms  {} registers  {} B spill stores  {} B spill loads  ({} launches: {})\n",
                 s.name, what, outcome == CacheOutcome::compiled ? module->compile_ms : ms, s.registers,
                 s.spill_store_bytes, s.spill_load_bytes, g.source.launches.size(),
                 [&] {
                   std::string l;
                   for (const DeviceLaunch& d : g.source.launches)
                     l += fmt::format("{}dev{} {}x{}", l.empty() ? "" : ", ", d.device, d.blocks, d.threads);
                   return l;
                 }());
      // Say once what the figures mean (ptxas's, per thread).
      fmt::print("  (registers: per thread, from ptxas; spill stores/loads: bytes a thread moves to and from local "
                 "memory\n   because its registers ran out, 0 is best; launches: device, blocks x threads; "
                 "docs/codegen.md)\n");
    }
    if (args->stats) {
      for (const KernelStats& s : module->kernels)
        fmt::print("  {:<60} {:>4} regs  {:>6} B shared  {:>6} B stack  {:>4}/{} B spills\n", s.name, s.registers,
                   s.shared_bytes, s.stack_bytes, s.spill_store_bytes, s.spill_load_bytes);
      fmt::print("  cache entry {}  ({} B cubin, arch {})\n", key, module->cubin.size(), args->arch);
    }
    if (!args->ptx_out.empty()) {
      if (module->ptx.empty()) throw Error("the cached entry holds no PTX: rerun with CANOPY_ALWAYS_COMPILE=1 --ptx FILE");
      write_output(args->ptx_out, module->ptx);
    }
  });
}

}  // namespace canopy::cli
