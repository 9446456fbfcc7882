// NVRTC compilation (see nvrtc_compiler.hpp). Every NVRTC call goes through NVRTC_CHECK, which names the call.
#include "runtime/jit/nvrtc_compiler.hpp"

#include "runtime/jit/cubin_stats.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nvrtc.h>

#include <chrono>
#include <memory>
#include <regex>
#include <sstream>

#include "core/error.hpp"

namespace canopy {
namespace {

#define NVRTC_CHECK(call)                                                                                    \
  do {                                                                                                       \
    const nvrtcResult result_ = (call);                                                                      \
    if (result_ != NVRTC_SUCCESS)                                                                            \
      throw Error(fmt::format("NVRTC: {} failed: {} ({}:{})", #call, nvrtcGetErrorString(result_), __FILE__, \
                              __LINE__));                                                                    \
  } while (0)

struct ProgramDeleter {
  void operator()(nvrtcProgram* p) const {
    nvrtcDestroyProgram(p);
    delete p;
  }
};

std::string program_log(nvrtcProgram p) {
  std::size_t size = 0;
  NVRTC_CHECK(nvrtcGetProgramLogSize(p, &size));
  std::string log(size, '\0');
  if (size > 0) NVRTC_CHECK(nvrtcGetProgramLog(p, log.data()));
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  NVRTC_CHECK(nvrtcVersion(&major, &minor));
  return fmt::format("{}.{}", major, minor);
}

std::vector<KernelStats> parse_ptxas_stats(const std::string& log) {
  std::vector<KernelStats> out;
  static const std::regex kFunction(R"(Function properties for (\S+))");
  static const std::regex kFrame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex kUsed(R"(Used (\d+) registers)");
  static const std::regex kShared(R"((\d+) bytes smem)");
  std::istringstream lines(log);
  std::string line;
  KernelStats* current = nullptr;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, kFunction)) {
      out.push_back(KernelStats{m[1].str()});
      current = &out.back();
    } else if (current && std::regex_search(line, m, kFrame)) {
      current->stack_bytes = std::stoi(m[1].str());
      current->spill_store_bytes = std::stoi(m[2].str());
      current->spill_load_bytes = std::stoi(m[3].str());
    } else if (current && std::regex_search(line, m, kUsed)) {
      current->registers = std::stoi(m[1].str());
      if (std::regex_search(line, m, kShared)) current->shared_bytes = std::stoi(m[1].str());
    }
  }
  return out;
}

namespace {

// The real architectures this NVRTC builds CUBIN for, e.g. "sm_75, sm_80, ..., sm_120".
std::string supported_archs() {
  int count = 0;
  NVRTC_CHECK(nvrtcGetNumSupportedArchs(&count));
  std::vector<int> archs(static_cast<std::size_t>(count));
  if (count > 0) NVRTC_CHECK(nvrtcGetSupportedArchs(archs.data()));
  std::string out;
  for (int a : archs) out += fmt::format("{}sm_{}", out.empty() ? "" : ", ", a);
  return out;
}

}  // namespace

CompiledModule compile_cuda(const SourceFile& source, const std::vector<SourceFile>& headers,
                            const CompileOptions& options) {
  // A virtual architecture (compute_90) compiles to PTX only: NVRTC would hand back an empty CUBIN.
  if (!options.arch.starts_with("sm_"))
    throw Error(fmt::format("cannot compile {} for '{}': give a real GPU architecture such as sm_90 (this NVRTC "
                            "supports {}); Canopy loads CUBIN, and keep_ptx adds the PTX",
                            source.name, options.arch, supported_archs()));
  const auto start = std::chrono::steady_clock::now();
  std::vector<const char*> header_texts, header_names;
  for (const SourceFile& h : headers) {
    header_texts.push_back(h.text.c_str());
    header_names.push_back(h.name.c_str());
  }
  std::unique_ptr<nvrtcProgram, ProgramDeleter> program(new nvrtcProgram{});
  NVRTC_CHECK(nvrtcCreateProgram(program.get(), source.text.c_str(), source.name.c_str(),
                                 static_cast<int>(headers.size()), header_texts.data(), header_names.data()));
  std::vector<std::string> args = {"--gpu-architecture=" + options.arch, "-std=c++17", "--ptxas-options=-v",
                                   "-default-device"};
  for (const std::string& o : options.extra_options) args.push_back(o);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  const nvrtcResult result = nvrtcCompileProgram(*program, static_cast<int>(argv.size()), argv.data());
  CompiledModule m;
  m.log = program_log(*program);
  if (result == NVRTC_ERROR_INVALID_OPTION)
    throw Error(fmt::format("NVRTC rejected the options for {} (architecture {}; supported: {}; options: {}):\n{}",
                            source.name, options.arch, supported_archs(), fmt::join(args, " "), m.log));
  if (result != NVRTC_SUCCESS)
    throw Error(fmt::format("NVRTC could not compile {} for {} ({}):\n{}", source.name, options.arch,
                            nvrtcGetErrorString(result), m.log));
  std::size_t size = 0;
  NVRTC_CHECK(nvrtcGetCUBINSize(*program, &size));
  m.cubin.resize(size);
  NVRTC_CHECK(nvrtcGetCUBIN(*program, m.cubin.data()));
  CANOPY_INTERNAL_ASSERT(!m.cubin.empty(),
                         fmt::format("NVRTC returned no CUBIN for {} ({})", source.name, options.arch));
  if (options.keep_ptx) {
    NVRTC_CHECK(nvrtcGetPTXSize(*program, &size));
    m.ptx.resize(size);
    NVRTC_CHECK(nvrtcGetPTX(*program, m.ptx.data()));
    while (!m.ptx.empty() && m.ptx.back() == '\0') m.ptx.pop_back();
  }
  m.kernels = parse_ptxas_stats(m.log);
  for (const KernelStats& k : cubin_kernel_stats(m.cubin)) {  // entries the log is silent about
    bool listed = false;
    for (const KernelStats& have : m.kernels) listed |= have.name == k.name;
    if (!listed) m.kernels.push_back(k);
  }
  m.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return m;
}

}  // namespace canopy
