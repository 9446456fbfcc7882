// Lays generated CUDA out with Clang's libFormat: getLLVMStyle(LK_Cpp) with two changes, ColumnLimit 0 (the
// emitter chooses line breaks and keeps lines within 120 columns; with a limit, libFormat's line-breaking search
// over the schedule tables took 1.4 s for dgx1-v100 allreduce on our CI machine, 0.25 s without) and
// ReflowComments off. Reflowing long trailing comments is what makes libFormat non-idempotent (a wrapped
// comment is re-aligned, then re-wrapped, on the next pass), and comments naming steps and counters read
// better whole. CUDA's qualifiers are declared attribute macros, so `extern "C" __global__ void
// __launch_bounds__(512) name(...)` is laid out as a declaration (the name starts its line when it breaks).
#include "codegen/source_format.hpp"

#include <clang/Format/Format.h>
#include <clang/Tooling/Core/Replacement.h>
#include <fmt/format.h>
#include <llvm/Support/Error.h>

#include "core/error.hpp"

namespace canopy {

namespace {

constexpr unsigned kColumnLimit = 0;  // the emitter breaks lines (see above)
constexpr const char* kFileName = "generated.cu";  // only names the text in libFormat's own messages

clang::format::FormatStyle cuda_style() {
  clang::format::FormatStyle style = clang::format::getLLVMStyle(clang::format::FormatStyle::LK_Cpp);
  style.ColumnLimit = kColumnLimit;
  style.ReflowComments = false;
  for (const char* macro : {"__host__", "__device__", "__global__", "__forceinline__", "__noinline__",
                            "__launch_bounds__", "__align__"})
    style.AttributeMacros.push_back(macro);
  return style;
}

}  // namespace

std::string format_cuda_source(std::string_view text) {
  const clang::format::FormatStyle style = cuda_style();
  const llvm::StringRef code(text.data(), text.size());
  clang::format::FormattingAttemptStatus status;
  const clang::tooling::Replacements replacements = clang::format::reformat(
      style, code, {clang::tooling::Range(0, static_cast<unsigned>(code.size()))}, kFileName, &status);
  if (!status.FormatComplete)
    throw InternalError(fmt::format("libFormat could not lay out the generated CUDA source: it is unbalanced near "
                                    "line {} (a bug in Canopy's emitter or templates)",
                                    status.Line));
  llvm::Expected<std::string> formatted = clang::tooling::applyAllReplacements(code, replacements);
  if (!formatted)
    throw InternalError(fmt::format("libFormat's replacements for the generated CUDA source do not apply: {}",
                                    llvm::toString(formatted.takeError())));
  return std::move(*formatted);
}

}  // namespace canopy
