// Little-endian integers and length-prefixed strings, written to and read from byte strings: the bricks of the
// bootstrap's frames and of the UniqueId. WireReader never reads past its end: each read says whether the bytes were
// there, and `where` names the field for the caller's error message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace canopy {

class WireWriter {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u16(std::uint16_t v) { put(v, 2); }
  void u32(std::uint32_t v) { put(v, 4); }
  void raw(std::string_view bytes) { out_.append(bytes); }
  // A u32 length, then the bytes.
  void text(std::string_view bytes) {
    u32(static_cast<std::uint32_t>(bytes.size()));
    raw(bytes);
  }
  std::string& bytes() { return out_; }

 private:
  void put(std::uint32_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : in_(bytes) {}

  bool u8(std::uint8_t* v) { return get(v, 1); }
  bool u16(std::uint16_t* v) { return get(v, 2); }
  bool u32(std::uint32_t* v) { return get(v, 4); }
  // `n` bytes as they are.
  bool raw(std::size_t n, std::string* v) {
    if (n > left()) return false;
    v->assign(in_.substr(at_, n));
    at_ += n;
    return true;
  }
  std::size_t offset() const { return at_; }
  std::size_t left() const { return in_.size() - at_; }

 private:
  template <class T>
  bool get(T* v, int n) {
    if (static_cast<std::size_t>(n) > left()) return false;
    std::uint32_t x = 0;
    for (int i = 0; i < n; ++i) x |= std::uint32_t{static_cast<unsigned char>(in_[at_ + i])} << (8 * i);
    *v = static_cast<T>(x);
    at_ += n;
    return true;
  }
  std::string_view in_;
  std::size_t at_ = 0;
};

}  // namespace canopy
