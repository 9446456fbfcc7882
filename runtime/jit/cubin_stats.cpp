// cubin_kernel_stats (see cubin_stats.hpp): a bounds-checked walk over ELF64 section headers, the symbol table and
// the .nv.info attribute records ({u8 format, u8 attribute, value}; format 4 carries a u16 size then the bytes).
#include "runtime/jit/cubin_stats.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>

namespace canopy {
namespace {

constexpr std::uint8_t kFormatNoValue = 1, kFormatByte = 2, kFormatHalf = 3, kFormatSized = 4;
constexpr std::uint8_t kRegCount = 0x2f, kFrameSize = 0x11;

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  std::optional<T> at(std::uint64_t offset) const {
    if (offset > bytes_.size() || bytes_.size() - offset < sizeof(T)) return std::nullopt;
    T v;
    std::memcpy(&v, bytes_.data() + offset, sizeof(T));
    return v;
  }
  std::string c_string(std::uint64_t offset) const {
    if (offset >= bytes_.size()) return {};
    const std::size_t end = bytes_.find('\0', offset);
    return std::string(bytes_.substr(offset, end == std::string_view::npos ? std::string_view::npos : end - offset));
  }

 private:
  std::string_view bytes_;
};

struct Section {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t offset = 0, size = 0;
  std::uint32_t link = 0;
};

}  // namespace

std::vector<KernelStats> cubin_kernel_stats(std::string_view cubin) {
  const Reader r(cubin);
  if (cubin.size() < 64 || cubin.substr(0, 4) != "\x7f" "ELF" || cubin[4] != 2 || cubin[5] != 1) return {};
  const auto shoff = r.at<std::uint64_t>(0x28);
  const auto shentsize = r.at<std::uint16_t>(0x3a), shnum = r.at<std::uint16_t>(0x3c), shstrndx = r.at<std::uint16_t>(0x3e);
  if (!shoff || !shentsize || !shnum || !shstrndx || *shentsize < 64 || *shstrndx >= *shnum) return {};
  std::vector<Section> sections(*shnum);
  for (std::uint16_t i = 0; i < *shnum; ++i) {
    const std::uint64_t h = *shoff + std::uint64_t{i} * *shentsize;
    const auto name = r.at<std::uint32_t>(h), type = r.at<std::uint32_t>(h + 4), link = r.at<std::uint32_t>(h + 40);
    const auto offset = r.at<std::uint64_t>(h + 24), size = r.at<std::uint64_t>(h + 32);
    if (!name || !type || !link || !offset || !size) return {};
    // A section must lie inside the bytes (types with no bytes in the file, such as .nv.shared, keep their size).
    const bool in_file = *type == 8 /* SHT_NOBITS */ || (*offset <= cubin.size() && *size <= cubin.size() - *offset);
    if (!in_file) return {};
    sections[i] = {std::to_string(*name), *type, *offset, *size, *link};
  }
  for (Section& s : sections) s.name = r.c_string(sections[*shstrndx].offset + std::stoull(s.name));
  // Symbol names by index, from .symtab and the string table it links to.
  std::vector<std::string> symbols;
  for (const Section& s : sections)
    if (s.name == ".symtab" && s.link < sections.size())
      for (std::uint64_t k = 0; k + 24 <= s.size; k += 24)
        if (const auto n = r.at<std::uint32_t>(s.offset + k)) symbols.push_back(r.c_string(sections[s.link].offset + *n));
  std::map<std::string, KernelStats> kernels;
  std::map<std::string, int> frames;
  for (const Section& s : sections) {
    if (s.name != ".nv.info") continue;
    for (std::uint64_t p = s.offset, end = s.offset + s.size; p + 2 <= end;) {
      const auto format = r.at<std::uint8_t>(p), attribute = r.at<std::uint8_t>(p + 1);
      p += 2;
      if (*format == kFormatNoValue) continue;
      if (*format == kFormatByte) { p += 1; continue; }
      if (*format == kFormatHalf) { p += 2; continue; }
      if (*format != kFormatSized) break;
      const auto size = r.at<std::uint16_t>(p);
      if (!size) break;
      p += 2;
      if (*size == 8 && (*attribute == kRegCount || *attribute == kFrameSize)) {
        const auto symbol = r.at<std::uint32_t>(p), value = r.at<std::uint32_t>(p + 4);
        if (symbol && value && *symbol < symbols.size()) {
          if (*attribute == kRegCount) kernels[symbols[*symbol]].registers = static_cast<int>(*value);
          else frames[symbols[*symbol]] = static_cast<int>(*value);
        }
      }
      p += *size;
    }
  }
  std::vector<KernelStats> out;
  for (auto& [name, k] : kernels) {
    k.name = name;
    if (auto f = frames.find(name); f != frames.end()) k.stack_bytes = f->second;
    out.push_back(k);
  }
  return out;
}

}  // namespace canopy
