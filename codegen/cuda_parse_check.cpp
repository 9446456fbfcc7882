// The Clang parse check: a SourceFile and its in-memory headers -> the SourceDiagnostics libTooling reports when it
// parses them as CUDA device code (clang -fsyntax-only), plus NVRTC's asm operand rules, which Clang lacks.
//
// How the code is seen. Clang 19 cannot parse CUDA 13's headers (texture_fetch_functions.h is gone), so the check
// reads none (-nocudainc -nocudalib -nostdinc, a --cuda-path that does not exist; headers come only from memory)
// and injects a prelude that declares what NVRTC offers device code without any #include:
//   qualifiers  __global__ __device__ __host__ __shared__ __constant__ __forceinline__ __noinline__
//               __launch_bounds__(max[, min]) __restrict__ __align__(n)
//   variables   threadIdx blockIdx blockDim gridDim (.x .y .z; convert to uint3 and dim3), warpSize
//   types       dim3; {char,uchar,short,ushort,int,uint,longlong,ulonglong,float,double}{1,2,3,4} with their
//               make_ functions (uint4, make_uint4, ...), aligned as CUDA aligns them
//   functions   __syncthreads __syncwarp __threadfence __threadfence_block __threadfence_system __trap clock
//               clock64 __nanosleep; __shfl_sync on int, unsigned, unsigned long long; __all_sync __any_sync;
//               atomicAdd atomicCAS atomicExch on int, unsigned, unsigned long long
//   asm         asm [volatile](...) with constraints "h" "r" "l" "f" "d" "n", held to NVRTC 13's rules: one
//               constraint letter, a scalar operand of the constraint's kind and size (h/r/l: 16/32/64-bit
//               integer, enum or pointer; f: float; d: double), no matching constraints ("0")
// Anything else NVRTC knows (min/max, __shfl_xor_sync, __ldg, math functions, cuda_fp16.h) is undeclared here: add it
// to the prelude when the templates start to use it. As NVRTC's -default-device (runtime/jit/nvrtc_compiler.cpp) does,
// functions without an execution space are device code: `#pragma clang force_cuda_host_device begin` makes them
// __host__ __device__ (one consequence: an explicit instantiation of a __global__ template is reported).
// Macros as under NVRTC: __CUDACC__, __CUDACC_RTC__ (NVRTC guards take the NVRTC branch), __CUDA_ARCH__ (900 for
// sm_90). Only here: CANOPY_CLANG_CHECK=1, __clang__, __CUDA__, __NVPTX__. Only under NVRTC:
// __CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__, __CUDACC_VER_BUILD__.
// Flags: -std=c++17 -Wall -ferror-limit=0, so unused variables, functions and values are diagnostics too.
// Cost: about 25 ms plus 30 ms per 1000 lines (3500 generated lines: 120-140 ms).
#include "codegen/cuda_parse_check.hpp"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
// GCC 12 reports a false -Wnonnull inside RecursiveASTVisitor's traversal of class bases.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnonnull"
#include <clang/AST/RecursiveASTVisitor.h>
#pragma GCC diagnostic pop
#include <clang/AST/Stmt.h>
#include <clang/Basic/DiagnosticIDs.h>
#include <clang/Basic/Version.h>
#include <clang/Driver/Driver.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Tooling/Tooling.h>
#include <fmt/format.h>
#include <link.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <optional>
#include <set>

#include "core/error.hpp"

namespace canopy {

namespace {

constexpr const char* kRoot = "/canopy-in-memory/";                 // the main file and the prelude live here,
constexpr const char* kIncludeRoot = "/canopy-in-memory/include/";  // the headers here, under their names
constexpr const char* kPreludeName = "canopy_clang_check_prelude.cuh";

// The NVRTC vocabulary (see the comment atop this file): kPreludeHead, then an #include of Clang's
// builtin-variable header by its path, then kPreludeTail.
constexpr const char* kPreludeHead = R"(#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define CANOPY_CLANG_CHECK 1
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __align__(n) __attribute__((aligned(n)))
)";
constexpr const char* kPreludeTail =
    R"(#define CANOPY_VECTOR_ALIGN(T, n) __align__(n * sizeof(T) < 16 ? n * sizeof(T) : 16)
#define CANOPY_VECTOR_TYPES(T, V)                                                                        \
  struct V##1 { T x; };                                                                                  \
  struct CANOPY_VECTOR_ALIGN(T, 2) V##2 { T x, y; };                                                     \
  struct V##3 { T x, y, z; };                                                                            \
  struct CANOPY_VECTOR_ALIGN(T, 4) V##4 { T x, y, z, w; };                                               \
  __host__ __device__ inline V##1 make_##V##1(T x) { return {x}; }                                       \
  __host__ __device__ inline V##2 make_##V##2(T x, T y) { return {x, y}; }                               \
  __host__ __device__ inline V##3 make_##V##3(T x, T y, T z) { return {x, y, z}; }                       \
  __host__ __device__ inline V##4 make_##V##4(T x, T y, T z, T w) { return {x, y, z, w}; }
CANOPY_VECTOR_TYPES(signed char, char)
CANOPY_VECTOR_TYPES(unsigned char, uchar)
CANOPY_VECTOR_TYPES(short, short)
CANOPY_VECTOR_TYPES(unsigned short, ushort)
CANOPY_VECTOR_TYPES(int, int)
CANOPY_VECTOR_TYPES(unsigned int, uint)
CANOPY_VECTOR_TYPES(long long, longlong)
CANOPY_VECTOR_TYPES(unsigned long long, ulonglong)
CANOPY_VECTOR_TYPES(float, float)
CANOPY_VECTOR_TYPES(double, double)
#undef CANOPY_VECTOR_TYPES
#undef CANOPY_VECTOR_ALIGN
struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int x = 1, unsigned int y = 1, unsigned int z = 1)
      : x(x), y(y), z(z) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  __host__ __device__ constexpr operator uint3() const { return {x, y, z}; }
};
#define CANOPY_BUILTIN_CONVERSIONS(B)                                                                    \
  __device__ inline B::operator dim3() const { return dim3(x, y, z); }                                   \
  __device__ inline B::operator uint3() const { return {x, y, z}; }
CANOPY_BUILTIN_CONVERSIONS(__cuda_builtin_threadIdx_t)
CANOPY_BUILTIN_CONVERSIONS(__cuda_builtin_blockIdx_t)
CANOPY_BUILTIN_CONVERSIONS(__cuda_builtin_blockDim_t)
CANOPY_BUILTIN_CONVERSIONS(__cuda_builtin_gridDim_t)
#undef CANOPY_BUILTIN_CONVERSIONS
__device__ void __syncwarp(unsigned int mask = 0xffffffffu);
__device__ int __shfl_sync(unsigned int mask, int var, int src_lane, int width = 32);
__device__ unsigned int __shfl_sync(unsigned int mask, unsigned int var, int src_lane, int width = 32);
__device__ unsigned long long __shfl_sync(unsigned int mask, unsigned long long var, int src_lane, int width = 32);
__device__ int __all_sync(unsigned int mask, int predicate);
__device__ int __any_sync(unsigned int mask, int predicate);
__device__ void __threadfence();
__device__ void __threadfence_block();
__device__ void __threadfence_system();
__device__ void __trap();
__device__ long long clock64();
__device__ int clock();
__device__ void __nanosleep(unsigned int ns);
__device__ int atomicAdd(int* address, int value);
__device__ unsigned int atomicAdd(unsigned int* address, unsigned int value);
__device__ unsigned long long atomicAdd(unsigned long long* address, unsigned long long value);
__device__ float atomicAdd(float* address, float value);
__device__ int atomicCAS(int* address, int compare, int value);
__device__ unsigned int atomicCAS(unsigned int* address, unsigned int compare, unsigned int value);
__device__ unsigned long long atomicCAS(unsigned long long* address, unsigned long long compare,
                                        unsigned long long value);
__device__ int atomicExch(int* address, int value);
__device__ unsigned int atomicExch(unsigned int* address, unsigned int value);
__device__ unsigned long long atomicExch(unsigned long long* address, unsigned long long value);
#pragma clang force_cuda_host_device begin
)";

// --- Clang's resource directory (its builtin CUDA variable header) ------------------------------------------

constexpr const char* kBuiltinVarsHeader = "include/__clang_cuda_builtin_vars.h";

// The directory of the libclang-cpp this process loaded, if any.
std::optional<std::string> loaded_libclang_dir() {
  std::optional<std::string> dir;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const llvm::StringRef name = info->dlpi_name ? info->dlpi_name : "";
        if (!llvm::sys::path::filename(name).starts_with("libclang-cpp.so")) return 0;
        llvm::SmallString<256> real;
        if (llvm::sys::fs::real_path(name, real)) return 0;
        *static_cast<std::optional<std::string>*>(out) = llvm::sys::path::parent_path(real).str();
        return 1;
      },
      &dir);
  return dir;
}

// Where the libclang-cpp in use keeps its resource directory, as the clang driver beside it would compute it;
// then Debian's standard place. Throws canopy::Error naming the places tried.
std::string find_resource_dir() {
  std::vector<std::string> candidates;
#ifdef CANOPY_CLANG_RESOURCE_DIR
  candidates.push_back(CANOPY_CLANG_RESOURCE_DIR);
#endif
  if (const std::optional<std::string> lib = loaded_libclang_dir())
    candidates.push_back(clang::driver::Driver::GetResourcesPath(*lib + "/../bin/clang"));
  candidates.push_back(
      clang::driver::Driver::GetResourcesPath("/usr/lib/llvm-" CLANG_VERSION_MAJOR_STRING "/bin/clang"));
  for (const std::string& dir : candidates) {
    llvm::SmallString<256> header(dir);
    llvm::sys::path::append(header, kBuiltinVarsHeader);
    if (llvm::sys::fs::exists(header)) return dir;
  }
  throw Error(fmt::format(
      "the Clang parse check needs Clang {}'s resource directory (it holds {}); looked in: {}. Install it "
      "(Debian: libclang-common-{}-dev, see scripts/setup) or configure with -DCANOPY_WITH_CLANG=OFF",
      CLANG_VERSION_MAJOR_STRING, kBuiltinVarsHeader, fmt::join(candidates, ", "), CLANG_VERSION_MAJOR_STRING));
}

const std::string& resource_dir() {
  static const std::string dir = find_resource_dir();
  return dir;
}

// --- collecting diagnostics ----------------------------------------------------------------------------------

class DiagnosticCollector : public clang::DiagnosticConsumer {
 public:
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override {
    clang::DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level == clang::DiagnosticsEngine::Ignored || level == clang::DiagnosticsEngine::Remark) return;
    llvm::SmallString<256> text;
    info.FormatDiagnostic(text);
    const llvm::StringRef flag = clang::DiagnosticIDs::getWarningOptionForDiag(info.getID());
    std::string message = text.str().str();
    if (level == clang::DiagnosticsEngine::Warning && !flag.empty()) message += fmt::format(" [-W{}]", flag.str());
    SourceDiagnostic d;
    d.severity = level == clang::DiagnosticsEngine::Warning ? "warning" : "error";
    d.message = std::move(message);
    const bool located = info.hasSourceManager() && info.getLocation().isValid();
    if (located) locate(info.getSourceManager(), info.getLocation(), d);
    if (level == clang::DiagnosticsEngine::Note) {
      if (diagnostics_.empty()) return;
      diagnostics_.back().notes.push_back(
          located ? fmt::format("{}:{}:{}: note: {}", d.file, d.line, d.column, d.message) : "note: " + d.message);
    } else if (!located && d.severity == "error") {
      unlocated_errors_.push_back(d.message);  // about the command line, not the source
    } else {
      if (!located) d.file = "<command line>";
      diagnostics_.push_back(std::move(d));
    }
  }

  std::vector<SourceDiagnostic> take_diagnostics() { return std::move(diagnostics_); }
  const std::vector<std::string>& unlocated_errors() const { return unlocated_errors_; }

 private:
  void locate(const clang::SourceManager& sm, clang::SourceLocation where, SourceDiagnostic& d) const {
    const clang::SourceLocation loc = sm.getFileLoc(where);
    const clang::PresumedLoc p = sm.getPresumedLoc(loc);
    if (p.isInvalid()) return;
    d.file = display_name(p.getFilename());
    d.line = static_cast<int>(p.getLine());
    d.column = static_cast<int>(p.getColumn());
    bool invalid = false;
    const llvm::StringRef buffer = sm.getBufferData(sm.getFileID(loc), &invalid);
    if (invalid) return;
    const std::size_t offset = std::min<std::size_t>(sm.getFileOffset(loc), buffer.size());
    const std::size_t begin = buffer.rfind('\n', offset == 0 ? 0 : offset - 1);
    const std::size_t start = begin == llvm::StringRef::npos || offset == 0 ? 0 : begin + 1;
    d.source_line = buffer.slice(start, buffer.find('\n', start)).rtrim('\r').str();
  }

  std::string display_name(llvm::StringRef path) const {
    if (path.consume_front(kIncludeRoot)) return path.str();
    if (path.consume_front(kRoot)) return path.str();
    return path.str();
  }

  std::vector<SourceDiagnostic> diagnostics_;
  std::vector<std::string> unlocated_errors_;
};

// --- NVRTC's asm operand rules ---------------------------------------------------------------------------------

class AsmOperandVisitor : public clang::RecursiveASTVisitor<AsmOperandVisitor> {
 public:
  explicit AsmOperandVisitor(clang::ASTContext& context) : context_(context), diags_(context.getDiagnostics()) {
    mismatch_ = diags_.getCustomDiagID(clang::DiagnosticsEngine::Error,
                                       "asm operand of type %0 (%1 bytes) does not match constraint '%2' (%3); "
                                       "NVRTC rejects it");
    letters_ = diags_.getCustomDiagID(clang::DiagnosticsEngine::Error,
                                      "asm constraint '%0' is not a single letter; NVRTC accepts one constraint "
                                      "letter per operand in device code");
    scalar_ = diags_.getCustomDiagID(clang::DiagnosticsEngine::Error,
                                     "asm operand of type %0 is not a scalar; NVRTC rejects it");
    instantiated_ = diags_.getCustomDiagID(clang::DiagnosticsEngine::Note, "in instantiation of %0 requested here");
  }

  bool shouldVisitTemplateInstantiations() const { return true; }

  bool TraverseDecl(clang::Decl* d) {
    auto* function = llvm::dyn_cast_or_null<clang::FunctionDecl>(d);
    if (function) functions_.push_back(function);
    const bool go_on = clang::RecursiveASTVisitor<AsmOperandVisitor>::TraverseDecl(d);
    if (function) functions_.pop_back();
    return go_on;
  }

  bool VisitGCCAsmStmt(clang::GCCAsmStmt* s) {
    for (unsigned i = 0; i < s->getNumOutputs(); ++i)
      check(s->getOutputConstraintLiteral(i), s->getOutputConstraint(i), s->getOutputExpr(i));
    for (unsigned i = 0; i < s->getNumInputs(); ++i)
      check(s->getInputConstraintLiteral(i), s->getInputConstraint(i), s->getInputExpr(i));
    return true;
  }

 private:
  void check(const clang::StringLiteral* literal, llvm::StringRef constraint, const clang::Expr* operand) {
    if (!operand || operand->isTypeDependent() || operand->containsErrors()) return;
    const clang::SourceLocation at = literal->getBeginLoc();
    const llvm::StringRef letters = constraint.ltrim("=+&");
    const clang::QualType type = operand->getType().getCanonicalType();
    // A template's non-dependent operand is seen in the template and again in every instance: report it once.
    if (!reported_.insert({at.getRawEncoding(), type.getAsString()}).second) return;
    if (letters.size() != 1 || (letters[0] >= '0' && letters[0] <= '9')) {
      diags_.Report(at, letters_) << constraint;
    } else if (!type->isScalarType()) {
      diags_.Report(at, scalar_) << operand->getType();
    } else if (const std::optional<std::pair<int, const char*>> expected = expectation(letters[0])) {
      const int bytes = static_cast<int>(context_.getTypeSizeInChars(type).getQuantity());
      const bool is_float = letters[0] == 'f' || letters[0] == 'd';
      const bool kind_ok = is_float ? type->isRealFloatingType()
                                    : type->isIntegralOrEnumerationType() || type->isPointerType();
      if (kind_ok && bytes == expected->first) return;
      diags_.Report(at, mismatch_) << operand->getType() << bytes << constraint << expected->second;
    } else {
      return;  // "n", and the letters Clang validates itself
    }
    note_instantiation();
  }

  static std::optional<std::pair<int, const char*>> expectation(char letter) {
    switch (letter) {
      case 'h': return std::pair{2, "a 16-bit integer"};
      case 'r': return std::pair{4, "a 32-bit integer"};
      case 'l': return std::pair{8, "a 64-bit integer or pointer"};
      case 'f': return std::pair{4, "a float"};
      case 'd': return std::pair{8, "a double"};
      default: return std::nullopt;
    }
  }

  // After a diagnostic inside a template instance: where the instance was requested, as Clang's own notes say.
  void note_instantiation() {
    if (functions_.empty()) return;
    const clang::FunctionDecl* f = functions_.back();
    if (f->getTemplateSpecializationKind() != clang::TSK_ImplicitInstantiation) return;
    const clang::SourceLocation at = f->getPointOfInstantiation();
    if (at.isValid()) diags_.Report(at, instantiated_) << f;
  }

  clang::ASTContext& context_;
  clang::DiagnosticsEngine& diags_;
  unsigned mismatch_ = 0, letters_ = 0, scalar_ = 0, instantiated_ = 0;
  std::vector<const clang::FunctionDecl*> functions_;    // those being traversed, innermost last
  std::set<std::pair<unsigned, std::string>> reported_;  // {constraint location, operand type}
};

class AsmOperandConsumer : public clang::ASTConsumer {
 public:
  void HandleTranslationUnit(clang::ASTContext& context) override {
    AsmOperandVisitor(context).TraverseDecl(context.getTranslationUnitDecl());
  }
};

// Parse and analyse only (clang -fsyntax-only), then the asm operand rules.
class CheckAction : public clang::ASTFrontendAction {
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&, llvm::StringRef) override {
    return std::make_unique<AsmOperandConsumer>();
  }
};

void add_file(llvm::vfs::InMemoryFileSystem& fs, const std::string& path, const std::string& text) {
  if (!fs.addFile(path, 0, llvm::MemoryBuffer::getMemBufferCopy(text, path)))
    throw InternalError(fmt::format("the Clang parse check was given two different files named '{}'", path));
}

}  // namespace

std::vector<SourceDiagnostic> check_cuda_source(const SourceFile& main, const std::vector<SourceFile>& headers,
                                                const std::string& arch) {
  const std::string& resources = resource_dir();
  llvm::SmallString<256> builtin_vars(resources);
  llvm::sys::path::append(builtin_vars, kBuiltinVarsHeader);

  auto memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  const std::string main_path = kRoot + main.name;
  const std::string prelude_path = std::string(kRoot) + kPreludeName;
  add_file(*memory, main_path, main.text);
  add_file(*memory, prelude_path,
           fmt::format("{}#include \"{}\"\n{}", kPreludeHead, builtin_vars.str().str(), kPreludeTail));
  for (const SourceFile& h : headers) add_file(*memory, kIncludeRoot + h.name, h.text);
  // The real file system stays underneath for Clang's builtin-variable header, reached by its absolute path only.
  auto file_system = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  file_system->pushOverlay(memory);
  const llvm::IntrusiveRefCntPtr<clang::FileManager> files(
      new clang::FileManager(clang::FileSystemOptions(), file_system));

  const std::vector<std::string> args = {
      "clang", "-fsyntax-only", "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=" + arch, "-std=c++17",
      "-nocudainc", "-nocudalib", std::string("--cuda-path=") + kRoot + "no-cuda", "-nostdinc",
      "-resource-dir=" + resources, "-include", prelude_path, "-I", kIncludeRoot, "-Wall", "-ferror-limit=0",
      "-fno-caret-diagnostics" /* also silences "N errors generated" on stderr */, main_path};
  DiagnosticCollector collector;
  clang::tooling::ToolInvocation invocation(args, std::make_unique<CheckAction>(), files.get());
  invocation.setDiagnosticConsumer(&collector);
  invocation.run();  // false whenever an error was reported: the collector holds them
  if (!collector.unlocated_errors().empty())
    throw Error(fmt::format("the Clang parse check could not run on {} for {}: {}", main.name, arch,
                            fmt::join(collector.unlocated_errors(), "; ")));
  return collector.take_diagnostics();
}

std::string to_string(const SourceDiagnostic& d) {
  std::string out = fmt::format("{}:{}:{}: {}: {}\n  {}", d.file, d.line, d.column, d.severity, d.message,
                                d.source_line);
  for (const std::string& note : d.notes) out += "\n  " + note;
  return out;
}

}  // namespace canopy
