// NCCL topology XML -> Topology (nccl_topo_import.hpp). Two passes, as NCCL's ncclTopoGetSystemFromXml: the CPUs
// and their PCIe trees first (GPUs, switches, NICs and their ports), then the NVLink, C2C and <pcilink> links that
// name other devices by bus id, then the links between CPU sockets. Rates come from nccl_topo_rates.hpp.
#include "topology/nccl_topo_import.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "topology/nccl_topo_rates.hpp"
#include "topology/topo_writer.hpp"
#include "core/xml_reader.hpp"

namespace canopy {
namespace {

using algo::XmlElement;
namespace nt = nccl_topo;

// A node of the topology being built: a GPU (index into gpus_) or a switch (index into switches_).
struct End {
  bool gpu = false;
  int index = -1;
};

struct Edge {
  End from;
  End to;
  double gbps = 0;
  std::string kind;
  bool both = true;
};

struct Gpu {
  std::int64_t bus = 0;
  std::string bus_text;
  int host = 0;
  int cpu = -1;                          // index into cpus_
  std::optional<int> rank, dev, sm;
  const XmlElement* element = nullptr;  // its <gpu>; null for a bare <pci class="0x03..">
  int line = 0;
  double pcie_gbps = 0;
  std::string pcie_kind;
  std::string pcie_text;                 // "PCIe gen5 x16"
};

struct Cpu {
  int host = 0;
  nt::CpuType type;
  int node = -1;  // switch index
};

class Importer {
 public:
  Importer(std::string_view origin, const NcclImportOptions& options) : origin_(origin), options_(options) {}

  NcclImport run(const XmlElement& system) {
    if (system.name != "system")
      fail(system, fmt::format("the root element is <{}>: NCCL's topology files start with <system version=\"1\">",
                               system.name));
    const auto version = int_attr(system, "version", "1");
    if (version != 1)
      fail(system, fmt::format("<system version=\"{}\">: NCCL reads version 1 only (NCCL_TOPO_XML_VERSION)", *version));
    for (const XmlElement& e : system.children)
      if (e.name == "cpu") host_of(e);
    for (const XmlElement& e : system.children) {
      if (e.name == "cpu")
        add_cpu(e);
      else
        ignored(e, "<system>");
    }
    if (gpus_.empty())
      throw Error(fmt::format("{}: error: no GPU in this file: NCCL lists GPUs as <pci class=\"0x030200\" ...> under a "
                              "<cpu> (dumps add a <gpu rank=.. sm=..> inside); is it a topology file (NCCL_TOPO_FILE) "
                              "and not a graph file (NCCL_GRAPH_FILE)?",
                              origin_));
    second_pass();
    join_cpus();
    return build();
  }

 private:
  // ---- attributes ------------------------------------------------------------------------------------------
  [[noreturn]] void fail(const XmlElement& e, const std::string& message) const { algo::fail_at(origin_, e.line, message); }

  const std::string* attr(const XmlElement& e, const std::string& key) const {
    const auto it = e.attrs.find(key);
    return it == e.attrs.end() ? nullptr : &it->second;
  }
  std::string str_attr(const XmlElement& e, const std::string& key, std::string_view example) const {
    if (const std::string* v = attr(e, key)) return *v;
    fail(e, fmt::format("<{}> lacks {}=\"...\", which NCCL requires: add it, e.g. {}=\"{}\"", e.name, key, key, example));
  }
  // nullopt when absent and `example` is null (optional); an error when absent and required, or not an integer.
  std::optional<int> int_attr(const XmlElement& e, const std::string& key, const char* example) const {
    const std::string* v = attr(e, key);
    if (!v) {
      if (!example) return std::nullopt;
      fail(e, fmt::format("<{}> lacks {}=\"...\", which NCCL requires: add it, e.g. {}=\"{}\"", e.name, key, key,
                          example));
    }
    const auto value = nt::parse_integer(*v);
    if (!value || *value < INT_MIN || *value > INT_MAX)
      fail(e, fmt::format("<{}> {}=\"{}\": expected an integer (decimal or 0x-hex), e.g. {}=\"{}\"", e.name, key, *v, key,
                          example ? example : "1"));
    return static_cast<int>(*value);
  }
  std::int64_t bus_attr(const XmlElement& e, const std::string& key) const {
    const std::string text = str_attr(e, key, "0000:18:00.0");
    const auto bus = nt::bus_id_value(text);
    if (!bus) fail(e, fmt::format("<{}> {}=\"{}\": expected a PCI bus id such as \"0000:18:00.0\"", e.name, key, text));
    return *bus;
  }
  void ignored(const XmlElement& e, std::string_view where) {
    if (ignored_.insert(e.name).second)
      notes_.push_back(fmt::format("<{}> in {} (line {}) is ignored, as NCCL ignores it", e.name, where, e.line));
  }

  // ---- nodes -----------------------------------------------------------------------------------------------
  int host_of(const XmlElement& cpu) {
    const std::string* hash = attr(cpu, "host_hash");
    const std::string key = hash ? *hash : "";
    const auto [it, added] = hosts_.emplace(key, static_cast<int>(hosts_.size()));
    return it->second;
  }
  std::string prefix(int host) const { return hosts_.size() > 1 ? fmt::format("h{}-", host) : ""; }
  End add_switch(std::string name, std::string legend) {
    switches_.push_back(name);
    legend_.push_back(name + " = " + legend);
    return {false, static_cast<int>(switches_.size()) - 1};
  }
  void link(End a, End b, double gbps, std::string kind, const XmlElement& at, bool both = true) {
    if (!(gbps > 0)) return;
    if (gbps > 1e6) fail(at, fmt::format("a link of {} GB/s: a topology allows at most 1e6 GB/s", format_gbps(gbps)));
    edges_.push_back({a, b, gbps, std::move(kind), both});
  }

  void add_cpu(const XmlElement& e) {
    const int host = host_of(e);
    const int numa = *int_attr(e, "numaid", "0");
    Cpu cpu{host, {}, -1};
    cpu.type.arch = str_attr(e, "arch", "x86_64");
    if (cpu.type.arch.rfind("x86_64", 0) == 0) {
      cpu.type.vendor = str_attr(e, "vendor", "GenuineIntel");
      if (cpu.type.vendor.rfind("GenuineIntel", 0) == 0 || cpu.type.vendor.rfind("CentaurHauls", 0) == 0 ||
          cpu.type.vendor.rfind("  Shanghai  ", 0) == 0) {
        cpu.type.family = *int_attr(e, "familyid", "6");
        cpu.type.model = *int_attr(e, "modelid", "143");
      }
    }
    const std::string name = fmt::format("{}cpu{}", prefix(host), cpus_.size());
    std::string what = fmt::format("<cpu numaid=\"{}\"> (line {}): {} {}", numa, e.line, cpu.type.arch,
                                   cpu.type.vendor.empty() ? "" : cpu.type.vendor);
    if (cpu.type.family >= 0) what += fmt::format(" family {} model {}", cpu.type.family, cpu.type.model);
    if (hosts_.size() > 1) what += fmt::format(", host_hash {}", attr(e, "host_hash") ? *attr(e, "host_hash") : "none");
    cpu.node = add_switch(name, what).index;
    cpus_.push_back(cpu);
    const int index = static_cast<int>(cpus_.size()) - 1;
    const End me{false, cpu.node};
    for (const XmlElement& c : e.children) {
      if (c.name == "pci")
        add_pci(c, me, index);
      else if (c.name == "nic")
        add_nic_on_cpu(c, me, index);
      else
        ignored(c, "<cpu>");
    }
  }

  // NCCL's ncclTopoGetIntDevice: vendor, device, subsystem vendor and device in one number.
  std::uint64_t device_id(const XmlElement& e) const {
    std::uint64_t id = 0;
    const std::pair<const char*, int> parts[] = {
        {"vendor", 48}, {"device", 32}, {"subsystem_vendor", 16}, {"subsystem_device", 0}};
    for (const auto& [key, shift] : parts)
      if (const std::string* v = attr(e, key))
        if (const auto n = nt::parse_integer(*v)) id += static_cast<std::uint64_t>(*n & 0xffff) << shift;
    return id;
  }

  void add_pci(const XmlElement& e, End parent, int cpu) {
    const std::string cls = str_attr(e, "class", "0x060400");
    const std::int64_t bus = bus_attr(e, "busid");
    const std::string bus_text = *attr(e, "busid");
    const int width = *int_attr(e, "link_width", "16");
    if (width < 0 || width > 1024) fail(e, fmt::format("<pci> link_width=\"{}\": expected 0 (unknown) to 32 lanes", width));
    const std::string speed = str_attr(e, "link_speed", "16.0 GT/s PCIe");
    const auto lane = nt::pcie_lane_rate(speed);
    if (!lane && unknown_speeds_.insert(speed).second)
      notes_.push_back(fmt::format("link_speed \"{}\" (first at line {}) is unknown: taken as 8 GT/s (gen3), as NCCL "
                                   "takes it",
                                   speed, e.line));
    const int rate = lane.value_or(nt::kDefaultLaneRate);
    const double gbps = nt::pcie_gbps(width, rate);
    const std::string kind = fmt::format("pcie{}", nt::pcie_generation(rate));
    const std::string text = fmt::format("PCIe gen{} x{}{}", nt::pcie_generation(rate), width == 0 ? 16 : width,
                                         width == 0 ? " (width 0, taken as 16)" : "");
    const int host = cpus_[cpu].host;
    const nt::PciClass type = nt::pci_class(cls);

    const XmlElement* gpu_element = nullptr;
    const XmlElement* nic_element = nullptr;
    for (const XmlElement& c : e.children) {
      if (c.name == "gpu") {
        if (!gpu_element)
          gpu_element = &c;
        else
          notes_.push_back(fmt::format("a second <gpu> in <pci busid=\"{}\"> (line {}, MLOPart or several ranks on one "
                                       "GPU) is left out: the first stands for the device",
                                       bus_text, c.line));
      } else if (c.name == "nic" && !nic_element) {
        nic_element = &c;
      }
    }
    if (gpu_element || type == nt::PciClass::gpu) {
      if (gpu_by_bus_.count({host, bus}))
        fail(e, fmt::format("GPU {} is listed twice (first at line {}): list each device once", bus_text,
                            gpus_[gpu_by_bus_.at({host, bus})].line));
      Gpu g{bus, bus_text, host, cpu, {}, {}, {}, gpu_element, e.line, gbps, kind, text};
      if (gpu_element) {
        g.rank = int_attr(*gpu_element, "rank", nullptr);
        g.dev = int_attr(*gpu_element, "dev", nullptr);
        g.sm = int_attr(*gpu_element, "sm", nullptr);
      }
      gpu_by_bus_[{host, bus}] = static_cast<int>(gpus_.size());
      gpus_.push_back(g);
      link({true, static_cast<int>(gpus_.size()) - 1}, parent, gbps, kind, e);
      return;
    }
    if (nic_element || type == nt::PciClass::nic) {
      const auto key = std::make_tuple(host, bus);
      auto it = nic_by_bus_.find(key);
      if (it == nic_by_bus_.end()) {
        const End nic = add_switch(fmt::format("{}nic{}", prefix(host), nics_++),
                                   fmt::format("NIC {} (line {}), {}", bus_text, e.line, text));
        it = nic_by_bus_.emplace(key, nic.index).first;
        link(nic, parent, gbps, kind, e);
      }
      if (nic_element) add_nets(*nic_element, {false, it->second}, host);
      return;
    }
    if (type != nt::PciClass::pci_switch) {
      notes_.push_back(fmt::format("<pci busid=\"{}\" class=\"{}\"> (line {}) is an NVSwitch or CPU port: left out, as "
                                   "NCCL leaves it out",
                                   bus_text, cls, e.line));
      return;
    }
    const End sw = add_switch(fmt::format("{}pci{}", prefix(host), pcis_++),
                              fmt::format("PCIe switch {} (line {}), {} to its parent", bus_text, e.line, text));
    pci_by_bus_[{host, bus}] = sw.index;
    pci_elements_.push_back({&e, sw.index, host});
    link(sw, parent, gbps, kind, e);
    const int gen = nt::bcm_generation(device_id(e), 0);
    for (const XmlElement& c : e.children) {
      if (c.name == "pci" && gen && nt::pci_class(c.attrs.count("class") ? c.attrs.at("class") : "") ==
                                        nt::PciClass::pci_switch &&
          nt::bcm_generation(device_id(c), 1) == gen) {
        // NCCL's ncclTopoFlattenBcmSwitches: the second level of a Broadcom gen4/gen5 switch is the same switch.
        notes_.push_back(fmt::format("Broadcom gen{} switch level {} (line {}) merged into its parent, as NCCL "
                                     "flattens it",
                                     gen, c.attrs.count("busid") ? c.attrs.at("busid") : "?", c.line));
        for (const XmlElement& gc : c.children)
          if (gc.name == "pci") add_pci(gc, sw, cpu);
      } else if (c.name == "pci") {
        add_pci(c, sw, cpu);
      } else if (c.name != "pcilink" && c.name != "gpu" && c.name != "nic") {
        ignored(c, "<pci>");
      }
    }
  }

  void add_nic_on_cpu(const XmlElement& e, End cpu_node, int cpu) {
    auto it = nic_on_cpu_.find(cpu);
    if (it == nic_on_cpu_.end()) {
      const int host = cpus_[cpu].host;
      const End nic = add_switch(fmt::format("{}nic{}", prefix(host), nics_++),
                                 fmt::format("NIC on {} without a PCI address (line {}), joined at NCCL's LOC_BW",
                                             switches_[cpus_[cpu].node], e.line));
      it = nic_on_cpu_.emplace(cpu, nic.index).first;
      link(nic, cpu_node, nt::kLocGbps, "loc", e);
    }
    add_nets(e, {false, it->second}, cpus_[cpu].host);
  }

  void add_nets(const XmlElement& nic, End nic_node, int host) {
    for (const XmlElement& net : nic.children) {
      if (net.name != "net") {
        ignored(net, "<nic>");
        continue;
      }
      const auto dev = int_attr(net, "dev", nullptr);
      if (!dev) continue;  // NCCL: a <net> without dev is not a device
      if (!int_attr(net, "net", nullptr).value_or(1)) {
        notes_.push_back(fmt::format("<net dev=\"{}\" net=\"0\"> (line {}) is a GIN/RMA device only: left out", *dev,
                                     net.line));
        continue;
      }
      const std::string name = fmt::format("{}net{}", prefix(host), *dev);
      if (!net_names_.insert(name).second) {
        notes_.push_back(fmt::format("<net dev=\"{}\"> is listed again at line {}: the port is kept once, where it "
                                     "first appears",
                                     *dev, net.line));
        continue;
      }
      int mbps = int_attr(net, "speed", nullptr).value_or(0);
      if (mbps <= 0) mbps = 10000;  // NCCL: some NICs report -1
      const std::string* port_name = attr(net, "name");
      const End port = add_switch(name, fmt::format("network port dev {}{} (line {}), {} Mb/s", *dev,
                                                    port_name ? " '" + *port_name + "'" : "", net.line, mbps));
      link(nic_node, port, mbps / 8000.0, "net", net);
    }
  }

  // ---- second pass: links that name devices by bus id -----------------------------------------------------
  End nvswitch() {
    if (nvs_ < 0)
      nvs_ = add_switch("nvs0", "the NVSwitch fabric: every <nvlink> to a non-GPU, non-CPU class (0x068000) ends here, "
                                "as NCCL joins them in one NVS node")
                 .index;
    return {false, nvs_};
  }

  void nvlink(int g, const std::string& target, int count, const std::string& tclass, int sm, const XmlElement& at,
              const char* source) {
    if (count <= 0) return;
    if (count > 4096) fail(at, fmt::format("<nvlink count=\"{}\">: expected a lane count of at most 4096", count));
    const double gbps = count * nt::nvlink_lane_gbps(sm);
    const std::string kind = nt::nvlink_kind(sm);
    const End me{true, g};
    const nt::PciClass type = nt::pci_class(tclass);
    if (type == nt::PciClass::gpu) {
      const auto bus = nt::bus_id_value(target);
      if (!bus) fail(at, fmt::format("<nvlink target=\"{}\">: expected a PCI bus id such as \"0000:18:00.0\"", target));
      const auto it = gpu_by_bus_.find({gpus_[g].host, *bus});
      if (it == gpu_by_bus_.end()) {
        notes_.push_back(fmt::format("{} NVLink of GPU {} to {} (line {}): no such GPU here, left out", source,
                                     gpus_[g].bus_text, target, at.line));
      } else if (it->second == g) {
        notes_.push_back(fmt::format("{} NVLink of GPU {} to itself (line {}) left out", source, gpus_[g].bus_text,
                                     at.line));
      } else {
        link(me, {true, it->second}, gbps, kind, at, /*both=*/false);  // the other GPU lists its own direction
      }
    } else if (type == nt::PciClass::cpu) {
      link(me, {false, cpus_[gpus_[g].cpu].node}, gbps, kind, at);
    } else {
      link(me, nvswitch(), gbps, kind, at);
    }
  }

  void second_pass() {
    std::map<std::int64_t, const NcclDetectedGpu*> detected;
    if (options_.detected)
      for (const NcclDetectedGpu& d : *options_.detected)
        if (const auto bus = nt::bus_id_value(d.bus_id)) detected[*bus] = &d;
    int from_detection = 0, bare = 0;
    for (int g = 0; g < static_cast<int>(gpus_.size()); ++g) {
      const Gpu& gpu = gpus_[g];
      if (!gpu.element) {
        ++bare;
        const auto it = hosts_.size() == 1 ? detected.find(gpu.bus) : detected.end();
        if (it == detected.end()) continue;
        ++from_detection;
        ++detected_gpus_;
        gpus_[g].sm = it->second->sm;
        for (const NcclNvlink& l : it->second->nvlinks)
          nvlink(g, l.target, l.count, l.tclass, it->second->sm, XmlElement{"gpu", {}, {}, gpu.line}, "detected");
        continue;
      }
      for (const XmlElement& c : gpu.element->children) {
        if (c.name == "nvlink") {
          const int count = *int_attr(c, "count", "18");
          const std::string tclass = str_attr(c, "tclass", "0x068000");
          const std::string target = nt::pci_class(tclass) == nt::PciClass::gpu ? str_attr(c, "target", "0000:18:00.0")
                                                                                   : "";
          if (!gpu.sm) fail(*gpu.element, "<gpu> lacks sm=\"...\", which NCCL requires for its NVLink rate: add it, "
                                          "e.g. sm=\"90\"");
          nvlink(g, target, count, tclass, *gpu.sm, c, "the");
        } else if (c.name == "c2c") {
          const int count = *int_attr(c, "count", "7");
          const int bw = *int_attr(c, "bw", "56376");
          if (count < 0 || bw < 0) fail(c, "<c2c> count and bw must be >= 0");
          link({true, g}, {false, cpus_[gpu.cpu].node}, static_cast<double>(bw) * count / 1000.0, "c2c", c);
        } else {
          ignored(c, "<gpu>");
        }
      }
    }
    if (bare > 0 && !options_.detected)
      notes_.push_back(fmt::format("{} GPU{} without a <gpu> element (a partial file): their NVLink is not in the file "
                                   "and was not detected, so none is imported; run `canopy topo import` on the machine "
                                   "itself to add the NVLink it detects",
                                   bare, bare == 1 ? " is listed" : "s are listed"));
    if (bare > 0 && options_.detected) {
      if (from_detection > 0)
        notes_.push_back(fmt::format("NVLink of the {} GPU{} the file lists without a <gpu> element: detected on this "
                                     "machine (NVML), matched by PCI bus id",
                                     from_detection, from_detection == 1 ? "" : "s"));
      if (from_detection < bare)
        notes_.push_back(fmt::format("{} GPU{} without a <gpu> element matched no GPU detected on this machine: no "
                                     "NVLink for {}",
                                     bare - from_detection, bare - from_detection == 1 ? "" : "s",
                                     bare - from_detection == 1 ? "it" : "them"));
    }
    for (const auto& [e, sw, host] : pci_elements_)
      for (const XmlElement& c : e->children)
        if (c.name == "pcilink") {
          const auto it = pci_by_bus_.find({host, bus_attr(c, "target")});
          if (it != pci_by_bus_.end() && it->second != sw)
            link({false, sw}, {false, it->second}, nt::kLocGbps, "loc", c, /*both=*/false);
        }
  }

  // NCCL's ncclTopoConnectCpus: every ordered pair of CPUs of one host, at the first one's inter-socket figure.
  void join_cpus() {
    std::set<std::string> said;
    for (const Cpu& a : cpus_)
      for (const Cpu& b : cpus_)
        if (&a != &b && a.host == b.host) {
          link({false, a.node}, {false, b.node}, nt::inter_cpu_gbps(a.type), nt::inter_cpu_kind(a.type),
               XmlElement{"cpu", {}, {}, 1}, /*both=*/false);
          if (said.insert(nt::cpu_description(a.type)).second)
            notes_.push_back(fmt::format("CPU sockets of one host are joined pairwise at {} GB/s each way: {}",
                                         format_gbps(nt::inter_cpu_gbps(a.type)), nt::cpu_description(a.type)));
        }
  }

  // ---- the Topology ----------------------------------------------------------------------------------------
  NcclImport build() {
    std::vector<int> order(gpus_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    auto key = [&](int i) {
      const Gpu& g = gpus_[i];
      return std::make_tuple(g.rank.value_or(INT_MAX), g.host, g.dev.value_or(INT_MAX), g.bus);
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
    NcclImport out;
    out.topology = Topology(options_.name);
    Topology& t = out.topology;
    std::vector<NodeId> gpu_ids(gpus_.size()), switch_ids;
    try {
      for (std::size_t k = 0; k < order.size(); ++k) {
        const Gpu& g = gpus_[order[k]];
        gpu_ids[order[k]] = t.gpu(fmt::format("gpu{}", k));
        std::string what = fmt::format("gpu{} = GPU {} (line {})", k, g.bus_text, g.line);
        if (g.rank) what += fmt::format(", NCCL rank {}", *g.rank);
        if (g.dev) what += fmt::format(", dev {}", *g.dev);
        if (g.sm) what += fmt::format(", sm {}", *g.sm);
        out.legend.push_back(what + ", " + g.pcie_text);
      }
      for (const std::string& name : switches_) switch_ids.push_back(t.relay(name));
      auto id = [&](End e) { return e.gpu ? gpu_ids[e.index] : switch_ids[e.index]; };
      // Repeated links add up (as NCCL's ncclTopoConnectNodes adds them), summed here first and rounded to 1e-6 GB/s
      // so that 5 + 5 + 4 + 4 lanes of 20.6 read 370.8, whatever the order.
      std::map<std::tuple<int, int, std::string, bool>, double> sums;
      for (const Edge& e : edges_) sums[{id(e.from).index, id(e.to).index, e.kind, e.both}] += e.gbps;
      for (const auto& [k, gbps] : sums) {
        const auto& [from, to, kind, both] = k;
        const Bandwidth rate{std::round(gbps * 1e6) / 1e6, kind};
        if (both)
          t.link(NodeId{from}, NodeId{to}, rate);
        else
          t.arc(NodeId{from}, NodeId{to}, rate);
      }
      for (std::size_t k = 0; k < order.size(); ++k) {
        const Gpu& g = gpus_[order[k]];
        t.host_link(gpu_ids[order[k]], {g.pcie_gbps, g.pcie_kind});
      }
      for (const Arc& a : t.arcs())
        if (a.gbps > 1e6)
          throw Error(fmt::format("links from {} to {} add up to {} GB/s, over the 1e6 GB/s a topology allows",
                                  t.node(a.from).name, t.node(a.to).name, format_gbps(a.gbps)));
      t.validate();
    } catch (const Error& e) {
      throw Error(fmt::format("{}: error: {}{}", origin_, e.what(),
                              hosts_.size() > 1 ? fmt::format("\n  the file holds {} hosts (host_hash values): NCCL joins "
                                                              "CPUs within a host only, so only NVLink joins hosts; "
                                                              "import one host's part at a time",
                                                              hosts_.size())
                                                : ""));
    }
    out.legend.insert(out.legend.end(), legend_.begin(), legend_.end());
    out.notes = std::move(notes_);
    out.detected_gpus = detected_gpus_;
    out.partial_gpus = static_cast<int>(std::count_if(gpus_.begin(), gpus_.end(), [](const Gpu& g) { return !g.element; }));
    return out;
  }

  std::string_view origin_;
  const NcclImportOptions& options_;
  std::map<std::string, int> hosts_;  // host_hash -> host index
  std::vector<Cpu> cpus_;
  std::vector<Gpu> gpus_;
  std::map<std::pair<int, std::int64_t>, int> gpu_by_bus_, pci_by_bus_;
  std::map<std::tuple<int, std::int64_t>, int> nic_by_bus_;
  std::map<int, int> nic_on_cpu_;
  std::vector<std::tuple<const XmlElement*, int, int>> pci_elements_;  // switch element, switch index, host
  std::vector<std::string> switches_, legend_, notes_;
  std::vector<Edge> edges_;
  std::set<std::string> ignored_, unknown_speeds_, net_names_;
  int nics_ = 0, pcis_ = 0, nvs_ = -1, detected_gpus_ = 0;
};

}  // namespace

NcclImport import_nccl_topology(std::string_view xml, std::string_view origin, const NcclImportOptions& options) {
  if (auto why = invalid_name_reason(options.name))
    throw Error(fmt::format("topology name '{}': {}", options.name, *why));
  const algo::XmlDialect dialect{"NCCL topology XML", "system", 64, "system > cpu > pci > ... > gpu > nvlink"};
  const XmlElement system = algo::read_xml(xml, origin, dialect);
  return Importer(origin, options).run(system);
}

std::string nccl_import_text(const NcclImport& imported, std::string_view origin) {
  const Topology& t = imported.topology;
  std::string text = fmt::format(
      "# imported by canopy topo import from {}: {} GPU{}, {} switch{}\n"
      "# rates are NCCL's (src/graph/topo.cc), GB/s each way: PCIe width x lane rate / 80 (x16: gen3 12, gen4 24, "
      "gen5 48), NVLink lanes x NCCL's figure for the GPU's sm (sm_80 20, sm_90 20.6, sm_100 40.1), <net speed> "
      "Mb/s / 8000\n",
      origin, t.gpu_count(), t.gpu_count() == 1 ? "" : "s", t.nodes().size() - t.gpu_count(),
      t.nodes().size() - t.gpu_count() == 1 ? "" : "es");
  for (const std::string& line : imported.legend) text += "# " + line + "\n";
  for (const std::string& note : imported.notes) text += "# note: " + note + "\n";
  return text + write_topo(t);
}

}  // namespace canopy
