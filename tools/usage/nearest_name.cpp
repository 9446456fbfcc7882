// The optimal string alignment distance and the closeness rule behind "did you mean" (see nearest_name.hpp).
#include "tools/usage/nearest_name.hpp"

#include <algorithm>
#include <cctype>

namespace canopy::cli {

namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

std::string_view without_dashes(std::string_view name) {
  const std::size_t first = name.find_first_not_of('-');
  return first == std::string_view::npos ? std::string_view{} : name.substr(first);
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: edits from a's first i letters to b's first j, kept as three rows (i - 2, i - 1, i).
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const bool same = lower(a[i - 1]) == lower(b[j - 1]);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
        current[j] = std::min(current[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::optional<std::string> nearest_name(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string_view bare = without_dashes(word);
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const std::string& candidate : candidates) {
    const std::string_view name = without_dashes(candidate);
    const std::size_t distance = edit_distance(bare, name);
    const std::size_t allowed = std::max<std::size_t>(1, std::max(bare.size(), name.size()) / 3);
    const bool close = distance <= allowed && distance < std::min(bare.size(), name.size());
    if (close && (!best || distance < best_distance)) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace canopy::cli
