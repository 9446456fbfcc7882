// A small reader for element-and-attribute XML (no text content), the shape of MSCCL-IR: elements with their line,
// attributes and children, and typed attribute look-ups whose errors read ORIGIN:LINE: error: MESSAGE.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace canopy::algo {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<XmlElement> children;
  int line = 1;
};

// The document's root element; throws canopy::Error naming the line on malformed XML or text content.
XmlElement read_xml(std::string_view text, std::string_view origin);

[[noreturn]] void fail_at(std::string_view origin, int line, const std::string& message);
// An integer attribute; `fallback` when absent (an error without one), an error when not an integer.
int int_attr(std::string_view origin, const XmlElement& e, const std::string& key, std::optional<int> fallback = {});
std::string str_attr(std::string_view origin, const XmlElement& e, const std::string& key,
                     const char* fallback = nullptr);

}  // namespace canopy::algo
