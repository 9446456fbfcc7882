// CANOPY_CRASH_REPORT=1: when the process dies of SIGSEGV, SIGBUS or SIGILL, this library writes to stderr where
// (the faulting instruction and, for a call through a null pointer, the caller that made it: the return address on
// top of the stack), each named by its object and nearest symbol, then a backtrace, and lets the signal kill the
// process as before. For diagnosing crashes inside programs Canopy is preloaded into (nccl-tests, PyTorch) on
// machines without a debugger; off unless asked for, so it never replaces a program's own handlers.
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

void say_address(const char* what, const void* address) {
  Dl_info info{};
  char line[512];
  const int n = dladdr(address, &info)
                    ? std::snprintf(line, sizeof line, "canopy: crash report: %s %p = %s(%s+%#lx)\n", what, address,
                                    info.dli_fname ? info.dli_fname : "?", info.dli_sname ? info.dli_sname : "?",
                                    static_cast<unsigned long>(static_cast<const char*>(address) -
                                                               static_cast<const char*>(info.dli_sname ? info.dli_saddr
                                                                                                       : info.dli_fbase)))
                    : std::snprintf(line, sizeof line, "canopy: crash report: %s %p (in no loaded object)\n", what,
                                    address);
  if (n > 0) (void)!write(2, line, static_cast<std::size_t>(n < static_cast<int>(sizeof line) ? n : sizeof line - 1));
}

void report(int signal, siginfo_t* info, void* context) {
  char line[128];
  const int n = std::snprintf(line, sizeof line, "canopy: crash report: signal %d (%s), fault address %p\n", signal,
                              strsignal(signal), info ? info->si_addr : nullptr);
  if (n > 0) (void)!write(2, line, static_cast<std::size_t>(n));
#if defined(__x86_64__)
  if (context) {
    const auto* uc = static_cast<const ucontext_t*>(context);
    const void* pc = reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP]);
    say_address("instruction", pc);
    const void* const* sp = reinterpret_cast<const void* const*>(uc->uc_mcontext.gregs[REG_RSP]);
    if (sp) say_address("return address on the stack (the caller, after a call through a bad pointer)", *sp);
  }
#endif
  void* frames[64];
  const int depth = backtrace(frames, 64);
  backtrace_symbols_fd(frames, depth, 2);
  std::signal(signal, SIG_DFL);  // SA_RESETHAND did so already; returning re-runs the fault, now fatal
}

__attribute__((constructor)) void install_crash_report() {
  const char* on = std::getenv("CANOPY_CRASH_REPORT");
  if (!on || std::strcmp(on, "1") != 0) return;
  struct sigaction action {};
  action.sa_sigaction = report;
  action.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGILL}) sigaction(s, &action, nullptr);
}

}  // namespace
