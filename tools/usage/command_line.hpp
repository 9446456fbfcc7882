// How every Canopy program (the `canopy` CLI, the bench programs) answers a command line it cannot run: a word it
// does not know is named beside the nearest valid one, even when --help is there too; a group of subcommands called
// without one shows its help and lists them; every such mistake exits kUsageStatus.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>

namespace canopy::cli {

// The exit status of a command-line mistake (tools/main.cpp lists every status).
inline constexpr int kUsageStatus = 2;

// The status to exit with after `app.parse` threw `error`, its message printed:
//  - a word left over at any level of the command (an unknown subcommand or option, an extra argument): stderr names
//    the first one and the nearest valid name at its level ("canopy topo: unknown subcommand 'shwo' (did you mean
//    'show'?); ..."), kUsageStatus, whatever else was given (--help included);
//  - --help, --version: their text on stdout, 0;
//  - a group (`canopy`, `canopy topo`) without its subcommand: its help on stderr, then a line listing the
//    subcommands, kUsageStatus;
//  - any other mistake (a required option missing, a value that does not convert): CLI11's message after the
//    command's name, kUsageStatus.
int parse_error_status(const CLI::App& app, const CLI::ParseError& error);

// A CLI11 check that a value is a whole number from `min` to `max`; its error reads "'12x' is not a whole number from
// 1 to 1000" after the argument's name.
CLI::Validator whole_number(long long min, long long max);

// Parses `argc`/`argv` into `app` (which must have no callbacks that do the program's work): nullopt when the
// program should go on, else the status to exit with (after --help, or a mistake reported as parse_error_status
// does).
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv);

}  // namespace canopy::cli
