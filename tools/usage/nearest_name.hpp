// "Did you mean ...?": the valid name nearest a mistyped one, for the messages of every program's command line.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace canopy::cli {

// Edits (insert, delete, substitute one letter, swap two neighbours) that turn `a` into `b`, letters compared
// without case (the optimal string alignment distance).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest `word`, when it is close enough to be what was meant: at most a third of the longer name's
// letters edited (one edit always allowed), and fewer edits than the shorter name has letters. Leading dashes are
// left out of the comparison (`-json` finds `--json`). Ties go to the earlier candidate; nullopt when none is close.
std::optional<std::string> nearest_name(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace canopy::cli
