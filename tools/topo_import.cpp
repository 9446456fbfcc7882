// `canopy topo import nccl.xml [--out my.topo] [--name NAME] [--no-detect]`: NCCL's topology XML (NCCL_TOPO_FILE,
// NCCL_TOPO_DUMP_FILE, the partial files cloud images ship) as .topo text (topology/nccl_topo_import.hpp). A partial file
// has no NVLink: it comes from detection on this machine (runtime/detect), matched by PCI bus id, else none.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>

#include "core/error.hpp"
#include "topology/nccl_topo_import.hpp"
#include "runtime/detect/gather_machine_facts.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {
namespace {

// This machine's NVLink in the terms of NCCL's <nvlink> elements: lanes grouped by far end.
std::vector<NcclDetectedGpu> detected_nvlink(const MachineFacts& facts) {
  std::vector<NcclDetectedGpu> gpus;
  for (const GpuFacts& g : facts.gpus) {
    NcclDetectedGpu d{g.pci_bus_id, g.cc_major * 10 + g.cc_minor, {}};
    std::map<std::pair<std::string, std::string>, int> lanes;
    for (const NvlinkLane& lane : g.nvlinks) {
      const char* tclass = lane.remote == NvlinkRemoteKind::gpu        ? "0x030200"
                           : lane.remote == NvlinkRemoteKind::nvswitch ? "0x068000"
                           : lane.remote == NvlinkRemoteKind::cpu      ? "0x068001"
                                                                       : nullptr;
      if (tclass) ++lanes[{lane.remote_bus_id, tclass}];
    }
    for (const auto& [end, count] : lanes) d.nvlinks.push_back({end.first, count, end.second});
    gpus.push_back(std::move(d));
  }
  return gpus;
}

}  // namespace

void add_topo_import(CLI::App& topo) {
  struct Args {
    std::string file;
    std::string out;
    std::string name = "nccl-topo";
    bool no_detect = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = topo.add_subcommand("import", "read NCCL's topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE) as .topo");
  cmd->add_option("file", args->file, "NCCL topology XML: a dump (NCCL_TOPO_DUMP_FILE) or a vendor's NCCL_TOPO_FILE")
      ->required();
  cmd->add_option("--out,-o", args->out, "write the .topo text to this file instead of printing it");
  cmd->add_option("--name", args->name, "the topology's name (default: nccl-topo)");
  cmd->add_flag("--no-detect", args->no_detect,
                "never ask this machine's GPUs for the NVLink a partial file leaves out");
  cmd->footer(
      "Examples:\n"
      "  NCCL_TOPO_DUMP_FILE=nccl.xml all_reduce_perf -g 8     let NCCL write what it sees, then:\n"
      "  canopy topo import nccl.xml --out box.topo --name box  and plan on it: canopy plan -t box.topo -c allreduce\n"
      "  canopy topo import /opt/microsoft/ndv5-topo.xml       a cloud image's NCCL_TOPO_FILE, printed\n"
      "What becomes what: each <pci class=\"0x03..\"> a GPU, gpu0.. in NCCL's rank order (bus id order without ranks);\n"
      "CPUs, PCIe switches, NICs, network ports and NVSwitches become switches (cpu0, pci0, nic0, net0, nvs0).\n"
      "Rates are NCCL's: PCIe width x lane rate / 80 GB/s (x16 gen4 24, gen5 48), NVLink lanes x NCCL's per-lane\n"
      "figure for the GPU's sm (sm_90 20.6), <net speed> Mb/s / 8000, CPU sockets by vendor and model (Skylake 10,\n"
      "Sapphire Rapids 22, AMD 16). Partial files (no <gpu>, as cloud images ship) carry no NVLink: run on the machine\n"
      "itself and it is detected (NVML), matched by PCI bus id; elsewhere none, with a note on stderr.\n"
      "The output starts with comments saying what each node was in the file. Docs: docs/topology.md, \"Importing\n"
      "NCCL's topology XML\".");
  cmd->callback([args] {
    if (auto why = invalid_name_reason(args->name)) throw Error(fmt::format("--name '{}': {}", args->name, *why));
    const std::string xml = read_input_file(args->file, "an NCCL topology XML file (NCCL_TOPO_FILE)");
    NcclImportOptions options;
    options.name = args->name;
    NcclImport imported = import_nccl_topology(xml, args->file, options);
    if (imported.partial_gpus > 0 && !args->no_detect) {
      try {
        options.detected = detected_nvlink(gather_machine_facts());
        imported = import_nccl_topology(xml, args->file, options);
        if (imported.detected_gpus < imported.partial_gpus)
          std::cerr << fmt::format(
              "canopy topo import: note: {} of the {} GPUs {} lists without NVLink (a partial file) are not GPUs of "
              "this machine (no PCI bus id matches): {} without NVLink\n",
              imported.partial_gpus - imported.detected_gpus, imported.partial_gpus, args->file,
              imported.detected_gpus == 0 ? "imported" : "those are imported");
      } catch (const Error& e) {
        std::cerr << fmt::format(
            "canopy topo import: note: {} lists {} GPU{} without NVLink (a partial file) and detection found none to "
            "add here ({}): imported without NVLink; run it on the machine the file describes to add it\n",
            args->file, imported.partial_gpus, imported.partial_gpus == 1 ? "" : "s", e.what());
      }
    }
    const std::string text = nccl_import_text(imported, args->file);
    if (args->out.empty()) {
      fmt::print("{}", text);
      return;
    }
    write_output(args->out, text);
    const Topology& t = imported.topology;
    fmt::print("wrote {}: topology {} with {} GPUs, {} switches, {} arcs\n", args->out, t.name(), t.gpu_count(),
               t.nodes().size() - t.gpu_count(), t.arcs().size());
  });
}

}  // namespace canopy::cli
