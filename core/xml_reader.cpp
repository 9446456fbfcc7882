// The element-and-attribute XML reader of xml_reader.hpp: comments and the declaration skipped, the five predefined
// entities decoded, every error naming the line.
#include "core/xml_reader.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <utility>

#include "core/error.hpp"

namespace canopy::algo {
namespace {

class XmlReader {
 public:
  XmlReader(std::string_view text, std::string_view origin, const XmlDialect& dialect)
      : text_(text), origin_(origin), dialect_(dialect) {}

  XmlElement document() {
    skip_misc();
    if (at_end()) fail(fmt::format("empty document: expected an <{}> element", dialect_.root));
    XmlElement root = element(0);
    skip_misc();
    if (!at_end()) fail("text after the root element");
    return root;
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw Error(fmt::format("{}:{}: error: {}", origin_, line_, message));
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  void advance(std::size_t n = 1) {
    for (std::size_t i = 0; i < n && pos_ < text_.size(); ++i, ++pos_)
      if (text_[pos_] == '\n') ++line_;
  }
  bool starts(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }
  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(peek()))) advance();
  }
  void skip_until(std::string_view end, const char* what) {
    while (!at_end() && !starts(end)) advance();
    if (at_end()) fail(fmt::format("unterminated {}", what));
    advance(end.size());
  }
  // Whitespace, comments, the <?xml ?> declaration.
  void skip_misc() {
    for (;;) {
      skip_space();
      if (starts("<!--"))
        skip_until("-->", "comment");
      else if (starts("<?"))
        skip_until("?>", "declaration");
      else
        return;
    }
  }
  std::string name() {
    const std::size_t start = pos_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '-' ||
                         peek() == ':' || peek() == '.'))
      advance();
    if (pos_ == start)
      fail(fmt::format("expected a name, found '{}'", at_end() ? std::string("end of file") : std::string(1, peek())));
    return std::string(text_.substr(start, pos_ - start));
  }
  std::string value() {
    const char quote = peek();
    if (quote != '"' && quote != '\'') fail("attribute values are quoted: name=\"value\"");
    advance();
    std::string out;
    while (!at_end() && peek() != quote) {
      if (peek() == '<') fail("'<' inside an attribute value");
      if (peek() == '&') {
        static const std::pair<std::string_view, char> kEntities[] = {
            {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
        bool known = false;
        for (const auto& [entity, c] : kEntities)
          if (starts(entity)) out += c, advance(entity.size()), known = true;
        if (!known) fail("unknown entity: use &lt; &gt; &amp; &quot; or &apos;");
        continue;
      }
      out += peek();
      advance();
    }
    if (at_end()) fail("unterminated attribute value");
    advance();
    return out;
  }
  XmlElement element(int depth) {
    if (depth > dialect_.max_depth)
      fail(fmt::format("elements nested too deeply for {} ({})", dialect_.format, dialect_.nesting));
    XmlElement e;
    e.line = line_;
    if (peek() != '<') {
      if (depth == 0)  // the document itself: say what this file should have been
        fail(fmt::format("expected '<' (an <{}> element): this is not {}{}, which begins with '<' after an optional "
                         "<?xml ...?> line, but this file begins with '{}'",
                         dialect_.root, dialect_.format, dialect_.format.ends_with("XML") ? "" : " XML",
                         std::string(1, peek())));
      fail("expected '<'");
    }
    advance();
    e.name = name();
    for (;;) {
      skip_space();
      if (starts("/>")) {
        advance(2);
        return e;
      }
      if (peek() == '>') {
        advance();
        break;
      }
      const int line = line_;
      const std::string key = name();
      skip_space();
      if (peek() != '=') fail(fmt::format("attribute '{}' needs a value: {}=\"...\"", key, key));
      advance();
      skip_space();
      if (!e.attrs.emplace(key, value()).second) {
        line_ = line;
        fail(fmt::format("attribute '{}' given twice on <{}>", key, e.name));
      }
    }
    for (;;) {
      skip_misc();
      if (at_end()) fail(fmt::format("<{}> (line {}) is never closed", e.name, e.line));
      if (starts("</")) {
        advance(2);
        const std::string closing = name();
        if (closing != e.name) fail(fmt::format("</{}> closes <{}> (line {})", closing, e.name, e.line));
        skip_space();
        if (peek() != '>') fail("expected '>'");
        advance();
        return e;
      }
      if (peek() != '<')
        fail(fmt::format("text inside <{}>: {} holds elements and attributes only", e.name, dialect_.format));
      e.children.push_back(element(depth + 1));
    }
  }

  std::string_view text_;
  std::string_view origin_;
  XmlDialect dialect_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

XmlElement read_xml(std::string_view text, std::string_view origin, const XmlDialect& dialect) {
  return XmlReader(text, origin, dialect).document();
}

[[noreturn]] void fail_at(std::string_view origin, int line, const std::string& message) {
  throw Error(fmt::format("{}:{}: error: {}", origin, line, message));
}

int int_attr(std::string_view origin, const XmlElement& e, const std::string& key, std::optional<int> fallback) {
  const auto it = e.attrs.find(key);
  if (it == e.attrs.end()) {
    if (fallback) return *fallback;
    fail_at(origin, e.line, fmt::format("<{}> lacks attribute {}", e.name, key));
  }
  int v = 0;
  const std::string& s = it->second;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    fail_at(origin, e.line, fmt::format("<{}> {}=\"{}\": expected an integer", e.name, key, s));
  return v;
}

std::string str_attr(std::string_view origin, const XmlElement& e, const std::string& key,
                     const char* fallback) {
  const auto it = e.attrs.find(key);
  if (it != e.attrs.end()) return it->second;
  if (fallback) return fallback;
  fail_at(origin, e.line, fmt::format("<{}> lacks attribute {}", e.name, key));
}


}  // namespace canopy::algo
