// LoadedSegments (loaded_segments.hpp): an object's PT_LOAD segments from dl_iterate_phdr.
#include "nccl/real/loaded_segments.hpp"

#include <elf.h>
#include <link.h>

namespace canopy::nccl_api {

LoadedSegments LoadedSegments::of_object_holding(const void* address) {
  struct Search {
    std::uintptr_t address;
    std::vector<Range>* ranges;
  };
  LoadedSegments found;
  if (!address) return found;
  Search search{reinterpret_cast<std::uintptr_t>(address), &found.ranges_};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        std::vector<Range> ranges;
        bool holds = false;
        for (int k = 0; k < info->dlpi_phnum; ++k) {
          const ElfW(Phdr)& h = info->dlpi_phdr[k];
          if (h.p_type != PT_LOAD) continue;
          const Range r{info->dlpi_addr + h.p_vaddr, info->dlpi_addr + h.p_vaddr + h.p_memsz};
          holds = holds || (s->address >= r.begin && s->address < r.end);
          ranges.push_back(r);
        }
        if (!holds) return 0;
        *s->ranges = std::move(ranges);
        return 1;  // found: stop
      },
      &search);
  return found;
}

bool LoadedSegments::contains(const void* address) const {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  for (const Range& r : ranges_)
    if (a >= r.begin && a < r.end) return true;
  return false;
}

}  // namespace canopy::nccl_api
