// NvmlLibrary: NVML (the NVIDIA driver's management library) opened at run time with dlopen("libnvidia-ml.so.1"),
// never linked, so every binary still starts on a machine without a driver. NVML's header ships with the driver,
// not with the toolkit, so the few types and entry points topology detection needs are declared here by hand,
// following NVML's documented nvml.h (see the notes beside each one). Checked with driver 580.159.04 on two H200 (a
// VM's slice of an HGX board): nvmlPciInfo_t's offsets, NVML_NVLINK_DEVICE_TYPE_SWITCH = 2, NVML_ERROR_NOT_FOUND = 6
// for a bus id with no GPU, and NVML_ERROR_INVALID_ARGUMENT for link indices past the last (17 there).
// Loading calls nvmlInit_v2; destruction calls nvmlShutdown. Entry points a driver may lack are optional: their
// pointer is null and callers skip that fact.
#pragma once

#include <optional>
#include <string>

namespace canopy {

namespace nvml {

// nvmlReturn_t is a C enum (int-sized on every ABI NVML ships for); only the values Canopy tests are named.
using Return = int;
inline constexpr Return kSuccess = 0;            // NVML_SUCCESS
inline constexpr Return kErrorNotSupported = 3;  // NVML_ERROR_NOT_SUPPORTED
inline constexpr Return kErrorNotFound = 6;      // NVML_ERROR_NOT_FOUND

struct DeviceOpaque;                // struct nvmlDevice_st, never dereferenced
using Device = DeviceOpaque*;       // nvmlDevice_t

// nvmlEnableState_t (int-sized enum): NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1.
inline constexpr int kFeatureEnabled = 1;

// nvmlIntNvLinkDeviceType_t (int-sized enum): what sits at the other end of an NVLink.
inline constexpr int kNvLinkDeviceTypeGpu = 0x00;     // NVML_NVLINK_DEVICE_TYPE_GPU
inline constexpr int kNvLinkDeviceTypeIbmNpu = 0x01;  // NVML_NVLINK_DEVICE_TYPE_IBMNPU (a POWER9 CPU)
inline constexpr int kNvLinkDeviceTypeSwitch = 0x02;  // NVML_NVLINK_DEVICE_TYPE_SWITCH
inline constexpr int kNvLinkDeviceTypeUnknown = 0xFF; // NVML_NVLINK_DEVICE_TYPE_UNKNOWN

// nvmlPciInfo_t as nvmlDeviceGetNvLinkRemotePciInfo_v2 fills it (the layout with busIdLegacy first, 68 bytes).
// The older layout (busId[16], the same five unsigned fields, then reserved words) shares the offsets of
// domain, bus and device, so Canopy reads only those three and formats the bus id itself.
struct PciInfo {
  char bus_id_legacy[16];         // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;     // device id << 16 | vendor id
  unsigned int pci_sub_system_id;
  char bus_id[32];                // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
};
static_assert(sizeof(PciInfo) == 68, "nvmlPciInfo_t is 68 bytes");

}  // namespace nvml

class NvmlLibrary {
 public:
  static constexpr const char* kDefaultPath = "libnvidia-ml.so.1";

  // Opens the library and calls nvmlInit_v2. nullopt when NVML cannot be used; `why_not` (when given) then says
  // why, e.g. "libnvidia-ml.so.1 not found: no NVIDIA driver is installed (...)". `path` is for tests.
  static std::optional<NvmlLibrary> load(std::string* why_not, const char* path = kDefaultPath);

  // Movable, not copyable: the open library and NVML's initialisation go with the object (`session_`); the entry
  // points are plain pointers and move with it member by member.
  NvmlLibrary(NvmlLibrary&&) noexcept = default;
  NvmlLibrary& operator=(NvmlLibrary&&) noexcept = default;

  // "NVML_ERROR_NOT_FOUND"-style text from nvmlErrorString, with the number.
  std::string error_string(nvml::Return result) const;

  // Required entry points: never null on a loaded library.
  nvml::Return (*init_v2)() = nullptr;
  nvml::Return (*shutdown)() = nullptr;
  const char* (*error_string_fn)(nvml::Return) = nullptr;                                  // nvmlErrorString
  nvml::Return (*device_get_handle_by_pci_bus_id_v2)(const char*, nvml::Device*) = nullptr;

  // Optional entry points: null when this driver's NVML lacks them.
  nvml::Return (*device_get_nvlink_state)(nvml::Device, unsigned int link, int* is_active) = nullptr;
  nvml::Return (*device_get_nvlink_version)(nvml::Device, unsigned int link, unsigned int* version) = nullptr;
  nvml::Return (*device_get_nvlink_remote_pci_info_v2)(nvml::Device, unsigned int link, nvml::PciInfo*) = nullptr;
  nvml::Return (*device_get_nvlink_remote_device_type)(nvml::Device, unsigned int link, int* type) = nullptr;
  nvml::Return (*device_get_max_pcie_link_generation)(nvml::Device, unsigned int*) = nullptr;
  nvml::Return (*device_get_max_pcie_link_width)(nvml::Device, unsigned int*) = nullptr;
  nvml::Return (*device_get_curr_pcie_link_generation)(nvml::Device, unsigned int*) = nullptr;
  nvml::Return (*device_get_curr_pcie_link_width)(nvml::Device, unsigned int*) = nullptr;

 private:
  // Owns the dlopen handle and, once nvmlInit_v2 succeeded, the matching nvmlShutdown; released on destruction,
  // emptied by a move.
  class Session {
   public:
    explicit Session(void* handle) : handle_(handle) {}
    Session(Session&& other) noexcept { *this = std::move(other); }
    Session& operator=(Session&& other) noexcept;
    ~Session() { release(); }
    void initialized(nvml::Return (*shutdown)()) { shutdown_ = shutdown; }

   private:
    void release();
    void* handle_ = nullptr;
    nvml::Return (*shutdown_)() = nullptr;  // set once NVML is initialised
  };

  explicit NvmlLibrary(void* handle) : session_(handle) {}

  Session session_;
};

}  // namespace canopy
