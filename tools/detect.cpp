// `canopy detect [--out FILE.topo] [--measure] [--devices 0,1,..] [--name NAME]`: this machine's GPUs as .topo
// text, under a comment header saying where every figure came from (runtime/detect/detect_topology.hpp).
#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <memory>

#include "core/error.hpp"
#include "topology/topo_writer.hpp"
#include "runtime/detect/detect_topology.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {
namespace {

// "0,1,3" -> {0, 1, 3}; empty -> {} (every visible device).
std::vector<int> parse_devices(const std::string& list) {
  std::vector<int> devices;
  if (list.empty()) return devices;
  std::size_t at = 0;
  while (at <= list.size()) {
    std::size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string word = list.substr(at, end - at);
    int value = -1;
    const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (word.empty() || ec != std::errc{} || ptr != word.data() + word.size() || value < 0)
      throw Error(fmt::format("--devices '{}': '{}' is not a CUDA device ordinal; give ordinals separated by commas, "
                              "e.g. --devices 0,1",
                              list, word));
    devices.push_back(value);
    at = end + 1;
  }
  return devices;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "an unnamed host";
  return name;
}

// "NVIDIA H200 x2, NVIDIA A100-SXM4-80GB": names in rank order, runs of one name folded.
std::string gpu_models(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size();) {
    std::size_t j = i;
    while (j < names.size() && names[j] == names[i]) ++j;
    if (!text.empty()) text += ", ";
    text += j - i > 1 ? fmt::format("{} x{}", names[i], j - i) : names[i];
    i = j;
  }
  return text;
}

std::string detected_text(const DetectedTopology& d) {
  const int n = d.topology.gpu_count();
  std::string text = fmt::format("# detected by canopy detect on {}: source {}, {} GPU{} ({})\n", host_name(),
                                 d.source, n, n == 1 ? "" : "s", gpu_models(d.gpu_names));
  for (const std::string& note : d.notes) text += "# " + note + "\n";
  return text + write_topo(d.topology);
}

}  // namespace

void add_detect_command(CLI::App& app) {
  struct Args {
    std::string out;
    bool measure = false;
    std::string devices;
    std::string name = kDetectedTopologyName;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "detect", "print this machine's GPUs as a .topo topology (NVLink from NVML, P2P from the CUDA runtime)");
  cmd->add_option("--out,-o", args->out, "write the .topo text to this file instead of printing it");
  cmd->add_flag("--measure", args->measure,
                "time peer copies between linked GPUs, and each GPU's copies to and from pinned host memory, and use "
                "the measured rates instead of nominal bandwidths");
  cmd->add_option("--devices,-d", args->devices,
                  "CUDA device ordinals to describe, in rank order, e.g. 0,1 (default: every visible device)");
  cmd->add_option("--name", args->name, "the topology's name (default: detected)");
  cmd->footer(
      "Examples:\n"
      "  canopy detect                              this machine's GPUs, nominal bandwidths\n"
      "  canopy detect --out mine.topo              save it; then `canopy plan -t mine.topo -c allreduce`\n"
      "  canopy detect --measure --out mine.topo    measured copy rates instead of nominal figures\n"
      "  canopy detect --devices 0,1 --name pair    two of the GPUs, under a name of your choice\n"
      "Without NVML (libnvidia-ml.so.1) only P2P reachability is known and PCIe is assumed; the header says so.\n"
      "Needs a GPU: without one it exits 1. Docs: docs/topology.md, \"Detecting the local machine\".");
  cmd->callback([args] {
    if (auto why = invalid_name_reason(args->name))
      throw Error(fmt::format("--name '{}': {}", args->name, *why));
    const DetectedTopology detected = detect_topology(parse_devices(args->devices), args->measure, args->name);
    const std::string text = detected_text(detected);
    if (args->out.empty()) {
      fmt::print("{}", text);
      return;
    }
    write_output(args->out, text);
    fmt::print("wrote {}: topology {} with {} GPUs (source {})\n", args->out, detected.topology.name(),
               detected.topology.gpu_count(), detected.source);
  });
}

}  // namespace canopy::cli
