// NvmlLibrary::load and the RAII around nvmlInit_v2 / nvmlShutdown (see nvml_library.hpp).
#include "runtime/cuda/nvml_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <utility>

namespace canopy {
namespace {

// The symbol `name` as a function pointer of `Fn`'s type, or null.
template <typename Fn>
void bind(void* handle, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
}

}  // namespace

std::optional<NvmlLibrary> NvmlLibrary::load(std::string* why_not, const char* path) {
  auto fail = [&](std::string reason) -> std::optional<NvmlLibrary> {
    if (why_not) *why_not = std::move(reason);
    return std::nullopt;
  };
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* detail = dlerror();
    return fail(fmt::format("{} not found: no NVIDIA driver is installed, or it is not on the loader's path ({})",
                            path, detail ? detail : "dlopen failed"));
  }
  NvmlLibrary nvml(handle);
  bind(handle, "nvmlInit_v2", nvml.init_v2);
  bind(handle, "nvmlShutdown", nvml.shutdown);
  bind(handle, "nvmlErrorString", nvml.error_string_fn);
  bind(handle, "nvmlDeviceGetHandleByPciBusId_v2", nvml.device_get_handle_by_pci_bus_id_v2);
  for (const auto& [name, present] :
       {std::pair{"nvmlInit_v2", nvml.init_v2 != nullptr}, std::pair{"nvmlShutdown", nvml.shutdown != nullptr},
        std::pair{"nvmlErrorString", nvml.error_string_fn != nullptr},
        std::pair{"nvmlDeviceGetHandleByPciBusId_v2", nvml.device_get_handle_by_pci_bus_id_v2 != nullptr}})
    if (!present) return fail(fmt::format("{} lacks {}: the NVIDIA driver is too old; update it", path, name));

  bind(handle, "nvmlDeviceGetNvLinkState", nvml.device_get_nvlink_state);
  bind(handle, "nvmlDeviceGetNvLinkVersion", nvml.device_get_nvlink_version);
  bind(handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", nvml.device_get_nvlink_remote_pci_info_v2);
  bind(handle, "nvmlDeviceGetNvLinkRemoteDeviceType", nvml.device_get_nvlink_remote_device_type);
  bind(handle, "nvmlDeviceGetMaxPcieLinkGeneration", nvml.device_get_max_pcie_link_generation);
  bind(handle, "nvmlDeviceGetMaxPcieLinkWidth", nvml.device_get_max_pcie_link_width);
  bind(handle, "nvmlDeviceGetCurrPcieLinkGeneration", nvml.device_get_curr_pcie_link_generation);
  bind(handle, "nvmlDeviceGetCurrPcieLinkWidth", nvml.device_get_curr_pcie_link_width);

  if (const nvml::Return r = nvml.init_v2(); r != nvml::kSuccess)
    return fail(fmt::format("nvmlInit_v2 failed: {} (is the NVIDIA driver loaded? try nvidia-smi)",
                            nvml.error_string(r)));
  nvml.session_.initialized(nvml.shutdown);
  return nvml;
}

NvmlLibrary::Session& NvmlLibrary::Session::operator=(Session&& other) noexcept {
  if (this != &other) {
    release();
    handle_ = std::exchange(other.handle_, nullptr);
    shutdown_ = std::exchange(other.shutdown_, nullptr);
  }
  return *this;
}

void NvmlLibrary::Session::release() {
  if (shutdown_) shutdown_();
  shutdown_ = nullptr;
  if (handle_) dlclose(handle_);
  handle_ = nullptr;
}

std::string NvmlLibrary::error_string(nvml::Return result) const {
  const char* text = error_string_fn ? error_string_fn(result) : nullptr;
  return fmt::format("{} (NVML error {})", text ? text : "unknown error", result);
}

}  // namespace canopy
