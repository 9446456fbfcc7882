// A failed parse turned into the message a user needs (see command_line.hpp): CLI11 leaves the words no level took in
// each level's remaining(); this walks the chain of chosen subcommands, names the first such word and looks up the
// nearest valid name beside it.
#include "tools/usage/command_line.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <charconv>
#include <iostream>
#include <string>
#include <vector>

#include "tools/usage/nearest_name.hpp"

namespace canopy::cli {

namespace {

// The command and the subcommands chosen on the line, outermost first.
std::vector<const CLI::App*> chosen_chain(const CLI::App& app) {
  std::vector<const CLI::App*> chain{&app};
  while (!chain.back()->get_subcommands().empty()) chain.push_back(chain.back()->get_subcommands().front());
  return chain;
}

// "canopy topo": the names from the outermost command down to `level`.
std::string command_path(const std::vector<const CLI::App*>& chain, const CLI::App* level) {
  std::string path;
  for (const CLI::App* a : chain) {
    path += (path.empty() ? "" : " ") + a->get_name();
    if (a == level) break;
  }
  return path;
}

std::vector<std::string> subcommand_names(const CLI::App& level) {
  std::vector<std::string> names;
  for (const CLI::App* sub : level.get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); }))
    names.push_back(sub->get_name());
  return names;
}

std::vector<std::string> option_names(const CLI::App& level) {
  std::vector<std::string> names;
  for (const CLI::Option* option : level.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

bool looks_like_option(const std::string& word) {
  if (word.size() < 2 || word[0] != '-') return false;
  const char next = word[1] == '-' ? (word.size() > 2 ? word[2] : 'x') : word[1];
  return !(std::isdigit(static_cast<unsigned char>(next)) || next == '.');  // -5, -.5: a (negative) number
}

// What a level takes besides options, for the message about one argument too many.
std::string positionals_taken(const CLI::App& level) {
  std::vector<std::string> names;
  for (const CLI::Option* option : level.get_options([](const CLI::Option* o) { return o->get_positional(); }))
    names.push_back(option->get_name());
  return names.empty() ? "it takes options only" : fmt::format("it takes {} only", fmt::join(names, " "));
}

// The message for `word`, left over at `level` of `chain`.
std::string leftover_message(const std::vector<const CLI::App*>& chain, const CLI::App& level,
                             const std::string& word) {
  const std::string path = command_path(chain, &level);
  if (looks_like_option(word)) {
    const std::string option = word.substr(0, word.find('='));  // --name=value: the name
    if (const auto near = nearest_name(option, option_names(level)))
      return fmt::format("{}: unknown option '{}' (did you mean '{}'?); run `{} --help` for the list", path, option,
                         *near, path);
    return fmt::format("{}: unknown option '{}'; run `{} --help` for the list", path, option, path);
  }
  const std::vector<std::string> subcommands = subcommand_names(level);
  if (!subcommands.empty()) {
    if (const auto near = nearest_name(word, subcommands))
      return fmt::format("{}: unknown subcommand '{}' (did you mean '{}'?); run `{} --help` for the list", path, word,
                         *near, path);
    return fmt::format("{}: unknown subcommand '{}'; the subcommands are {}; run `{} --help` for what each does", path,
                       word, fmt::join(subcommands, ", "), path);
  }
  return fmt::format("{}: unexpected argument '{}' ({}); run `{} --help` for its arguments", path, word,
                     positionals_taken(level), path);
}

}  // namespace

int parse_error_status(const CLI::App& app, const CLI::ParseError& error) {
  const std::vector<const CLI::App*> chain = chosen_chain(app);
  for (const CLI::App* level : chain) {
    if (level->get_allow_extras() || level->get_prefix_command()) continue;
    for (const std::string& word : level->remaining())
      if (word != "--") {
        std::cerr << leftover_message(chain, *level, word) << "\n";
        return kUsageStatus;
      }
  }
  if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
  const CLI::App& last = *chain.back();
  const std::string path = command_path(chain, &last);
  if (last.get_require_subcommand_min() > 0 && last.get_subcommands().empty()) {
    std::cerr << app.help() << "\n"
              << fmt::format("{}: a subcommand is required, one of: {}\n", path,
                             fmt::join(subcommand_names(last), ", "));
    return kUsageStatus;
  }
  std::cerr << fmt::format("{}: {}\nRun `{} --help` for more information.\n", path, error.what(), path);
  return kUsageStatus;
}

CLI::Validator whole_number(long long min, long long max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        long long value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < min || value > max)
          return fmt::format("'{}' is not a whole number from {} to {}", text, min, max);
        return "";
      },
      fmt::format("from {} to {}", min, max));
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return parse_error_status(app, error);
  }
  return std::nullopt;
}

}  // namespace canopy::cli
