// A small reader for element-and-attribute XML (no text content), the shape of MSCCL-IR and of NCCL's topology XML:
// elements with their line, attributes and children, and typed attribute look-ups whose errors read
// ORIGIN:LINE: error: MESSAGE.
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

// What a format expects, for the reader's limits and messages. The defaults are MSCCL-IR's.
struct XmlDialect {
  std::string_view format = "MSCCL-IR";                 // "text inside <x>: FORMAT holds elements and attributes only"
  std::string_view root = "algo";                       // "empty document: expected an <ROOT> element"
  int max_depth = 8;                                    // deeper nesting is an error (and bounds the recursion)
  std::string_view nesting = "algo > gpu > tb > step";  // "elements nested too deeply for FORMAT (NESTING)"
};

// The document's root element; throws canopy::Error naming the line on malformed XML or text content.
XmlElement read_xml(std::string_view text, std::string_view origin, const XmlDialect& dialect = {});

[[noreturn]] void fail_at(std::string_view origin, int line, const std::string& message);
// An integer attribute; `fallback` when absent (an error without one), an error when not an integer.
int int_attr(std::string_view origin, const XmlElement& e, const std::string& key, std::optional<int> fallback = {});
std::string str_attr(std::string_view origin, const XmlElement& e, const std::string& key,
                     const char* fallback = nullptr);

}  // namespace canopy::algo
