// Logger (see logger.hpp).
#include "core/logger.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace canopy {

namespace {
constexpr std::pair<const char*, LogSubsys> kSubsystems[] = {{"init", LogSubsys::init},
                                                             {"plan", LogSubsys::plan},
                                                             {"jit", LogSubsys::jit},
                                                             {"run", LogSubsys::run},
                                                             {"watchdog", LogSubsys::watchdog}};
const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::warn: return "WARN";
    case LogLevel::info: return "INFO";
    case LogLevel::debug: return "DEBUG";
    default: return "";
  }
}
}  // namespace

std::string to_string(LogSubsys subsys) {
  for (const auto& [name, s] : kSubsystems)
    if (s == subsys) return name;
  return "?";
}

Logger Logger::from_environment() {
  std::vector<std::string> problems;
  LogLevel level = LogLevel::warn;
  if (const char* v = std::getenv("CANOPY_LOG"); v && *v) {
    const std::string value(v);
    if (value == "off" || value == "none") level = LogLevel::off;
    else if (value == "warn") level = LogLevel::warn;
    else if (value == "info") level = LogLevel::info;
    else if (value == "debug" || value == "trace") level = LogLevel::debug;
    else problems.push_back(fmt::format("CANOPY_LOG='{}' is not off, warn, info or debug; using warn", value));
  }
  unsigned mask = ~0u;
  if (const char* v = std::getenv("CANOPY_LOG_SUBSYS"); v && *v) {
    mask = 0;
    std::string list(v);
    std::size_t start = 0;
    while (start <= list.size()) {
      const std::size_t end = std::min(list.find(',', start), list.size());
      const std::string name = list.substr(start, end - start);
      bool known = name == "all";
      if (known) mask = ~0u;
      for (const auto& [n, s] : kSubsystems)
        if (name == n) mask |= static_cast<unsigned>(s), known = true;
      if (!known && !name.empty())
        problems.push_back(fmt::format("CANOPY_LOG_SUBSYS names '{}'; known: init, plan, jit, run, watchdog, all", name));
      start = end + 1;
    }
  }
  Logger logger(level, mask);
  for (const std::string& p : problems) logger.warn(LogSubsys::init, p);
  return logger;
}

void Logger::log(LogLevel level, LogSubsys subsys, std::string_view message) const {
  if (!enabled(level, subsys)) return;
  const std::string line =
      fmt::format("canopy {} {} [{}] {}", static_cast<long>(getpid()), level_name(level), to_string(subsys), message);
  if (sink_) {
    sink_(line);
    return;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace canopy
