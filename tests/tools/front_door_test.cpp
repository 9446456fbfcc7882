// Every program of build/bin as a user first meets it: `--help` teaches (exit 0, the program's name, a usage line,
// an example), and a wrong word (an unknown subcommand or option, with --help or without; an extra or malformed
// argument; a missing subcommand) exits 2 with stderr naming it, and for subcommands and options the nearest valid
// name; never a crash. The list of programs is checked against build/bin and the install rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// A wrong invocation and the word its message must name.
struct BadCall {
  std::string args;
  std::string named;
};

struct Program {
  std::string target;  // the CMake target
  std::string file;    // its file in build/bin
  std::string path;
  std::vector<BadCall> bad_arguments;  // wrong positional arguments (unknown options are tried on every program)
};

const std::vector<Program>& programs() {
  static const std::vector<Program> list = {
      {"canopy_cli", "canopy", CANOPY_CLI, {{"topo list extra", "'extra'"}}},
      {"canopy_bench_planner",
       "canopy-bench-planner",
       CANOPY_BENCH_PLANNER,
       {{"dgx9", "'dgx9'"}, {"--quick cluster0", "'cluster0'"}, {"dgx1-v100 cluster1x", "'cluster1x'"}}},
      {"canopy_blink_table", "canopy-blink-table", CANOPY_BLINK_TABLE, {{"extra", "'extra'"}}},
      {"canopy_sim_vs_measured",
       "canopy-sim-vs-measured",
       CANOPY_SIM_VS_MEASURED,
       {{"dgx1-v100 /nonexistent/bench.json", "/nonexistent/bench.json"},
        {"dgx1-v100 /nonexistent/bench.json extra", "'extra'"},
        {"", "TOPOLOGY"}}},
      {"canopy_bench_jit",
       "canopy-bench-jit",
       CANOPY_BENCH_JIT,
       {{"abc", "REPEATS: 'abc'"}, {"0", "REPEATS: '0'"}, {"3 4", "'4'"}}},
      {"canopy_bench_launch",
       "canopy-bench-launch",
       CANOPY_BENCH_LAUNCH,
       {{"12x", "CALLS: '12x'"}, {"-- -5", "CALLS: '-5'"}, {"100 200", "'200'"}}},
      {"canopy_bench_hybrid",
       "canopy-bench-hybrid",
       CANOPY_BENCH_HYBRID,
       {{"16 big", "MiB: 'big'"}, {"16 0", "MiB: '0'"}, {"1.5", "MiB: '1.5'"}}},
      {"canopy_bench_check",
       "canopy-bench-check",
       CANOPY_BENCH_CHECK,
       {{"12x", "ELEMENTS: '12x'"}, {"5", "ELEMENTS: '5'"}, {"4096 8192", "'8192'"}}},
      {"canopy_example_processes",
       "canopy-example-processes",
       CANOPY_EXAMPLE_PROCESSES,
       {{"dgx9", "'dgx9'"}, {"hgx-h100 extra", "'extra'"}}},
      {"canopy_example_relays",
       "canopy-example-relays",
       CANOPY_EXAMPLE_RELAYS,
       {{"dgx9", "'dgx9"},
        {"dgx1-p100 0,1 2,3 extra", "'extra'"},
        {"dgx1-p100 0,1 1", "relay GPU gpu1 is also a rank"}}},
  };
  return list;
}

struct Outcome {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs `path args` with stdin empty; stdout and stderr apart. The rank variables are cleared, as outside `canopy run`.
Outcome run(const std::string& path, const std::string& args) {
  static int calls = 0;
  const std::filesystem::path err_file =
      std::filesystem::temp_directory_path() / ("canopy-front-door-" + std::to_string(::getpid()) + "-" +
                                                std::to_string(calls++) + ".err");
  const testing::CommandRun r =
      testing::run_command("env -u CANOPY_RANK -u CANOPY_NRANKS -u CANOPY_UNIQUE_ID " + path + " " + args +
                           " </dev/null 2>" + err_file.string());
  Outcome o{r.status, r.output, testing::read_file(err_file)};
  std::filesystem::remove(err_file);
  return o;
}

Outcome canopy(const std::string& args) { return run(CANOPY_CLI, args); }

// How often `words` stands in `text` followed by a space, a line's end or the text's end ("canopy bench" in
// "canopy bench -c x" or "canopy bench\n", not in "canopy bench-compare").
std::size_t count_of(const std::string& text, const std::string& words) {
  std::size_t n = 0;
  for (std::size_t at = text.find(words); at != std::string::npos; at = text.find(words, at + 1)) {
    const std::size_t end = at + words.size();
    n += end == text.size() || text[end] == ' ' || text[end] == '\n';
  }
  return n;
}

// The subcommand names a CLI11 help text lists under "Subcommands:".
std::vector<std::string> listed_subcommands(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help.substr(std::min(help.size(), help.find("\nSubcommands:\n"))));
  std::string line;
  std::getline(in, line);  // the blank before
  std::getline(in, line);  // "Subcommands:"
  while (std::getline(in, line) && line.rfind("  ", 0) == 0) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    names.push_back(name);
  }
  return names;
}

TEST(FrontDoor, EveryProgramInBuildBinIsCovered) {
  const std::filesystem::path bin = std::filesystem::path(CANOPY_CLI).parent_path();
  std::set<std::string> found, known;
  for (const auto& entry : std::filesystem::directory_iterator(bin))
    if (entry.is_regular_file() && ::access(entry.path().c_str(), X_OK) == 0) found.insert(entry.path().filename());
  for (const Program& p : programs()) {
    known.insert(p.file);
    EXPECT_EQ(std::filesystem::path(p.path).parent_path(), bin) << p.target << " is built outside " << bin;
  }
  EXPECT_EQ(found, known) << "a program in " << bin << " is missing from this test's list (or the list names one "
                          << "that is not built): give it --help and argument errors, then add it to programs()";
}

TEST(FrontDoor, EveryInstalledProgramIsCovered) {
  const std::string rules = testing::read_file(testing::source_dir() / "cmake/install_rules.cmake");
  const std::regex installed(R"(install\(TARGETS\s+(\w+)[^)]*\bRUNTIME\b)");
  int count = 0;
  for (auto it = std::sregex_iterator(rules.begin(), rules.end(), installed); it != std::sregex_iterator(); ++it) {
    ++count;
    const std::string target = (*it)[1];
    EXPECT_TRUE(std::any_of(programs().begin(), programs().end(), [&](const Program& p) { return p.target == target; }))
        << "cmake/install_rules.cmake installs " << target << ", which this test does not run";
  }
  EXPECT_GE(count, 1) << "no install(TARGETS ... RUNTIME ...) found: has cmake/install_rules.cmake changed shape?";
}

TEST(FrontDoor, EveryProgramAnswersHelpWithUsageAndAnExample) {
  for (const Program& p : programs())
    for (const char* flag : {"--help", "-h"}) {
      const Outcome o = run(p.path, flag);
      EXPECT_EQ(o.status, 0) << p.file << " " << flag << "\n" << o.err;
      EXPECT_THAT(o.out, HasSubstr(p.file)) << p.file << " " << flag;
      EXPECT_THAT(o.out, HasSubstr("Usage: ")) << p.file << " " << flag;
      EXPECT_THAT(o.out, HasSubstr("Example")) << p.file << " " << flag;
      EXPECT_GE(count_of(o.out, p.file), 2u) << p.file << " " << flag << ": an example runs it\n" << o.out;
      EXPECT_THAT(o.err, IsEmpty()) << p.file << " " << flag;
    }
}

TEST(FrontDoor, EveryProgramRejectsAnUnknownOptionByName) {
  for (const Program& p : programs())
    for (const char* args : {"--frobnicate", "--frobnicate --help", "--help --frobnicate"}) {
      const Outcome o = run(p.path, args);
      EXPECT_EQ(o.status, 2) << p.file << " " << args << "\n" << o.err;
      EXPECT_THAT(o.err, HasSubstr("'--frobnicate'")) << p.file << " " << args;
      EXPECT_THAT(o.out, IsEmpty()) << p.file << " " << args << ": no help beside a mistake";
    }
}

TEST(FrontDoor, EveryProgramNamesAWrongArgument) {
  for (const Program& p : programs())
    for (const BadCall& call : p.bad_arguments) {
      const Outcome o = run(p.path, call.args);
      EXPECT_EQ(o.status, 2) << p.file << " " << call.args << "\n" << o.err;
      EXPECT_THAT(o.err, HasSubstr(call.named)) << p.file << " " << call.args;
      EXPECT_THAT(o.err, HasSubstr(p.file)) << p.file << " " << call.args << ": the message says whose it is";
    }
}

TEST(FrontDoor, EveryCanopySubcommandAnswersHelpWithAnExampleOfItself) {
  std::vector<std::string> paths = {""};
  int checked = 0;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string command = "canopy" + (paths[i].empty() ? "" : " " + paths[i]);
    const Outcome o = canopy(paths[i] + " --help");
    ++checked;
    EXPECT_EQ(o.status, 0) << command << "\n" << o.err;
    EXPECT_THAT(o.out, HasSubstr("Usage: " + command + " ")) << command;
    EXPECT_GE(count_of(o.out, command), 2u) << command << " --help shows no example of itself:\n" << o.out;
    // The environment's list is the top level's (issue 71: a subcommand's help repeated its ~50 variables).
    if (paths[i].empty())
      EXPECT_THAT(o.out, HasSubstr("\nEnvironment:\n  CANOPY_")) << "canopy --help lists the environment";
    else
      EXPECT_THAT(o.out, Not(HasSubstr("\nEnvironment:\n"))) << command << " --help repeats the environment";
    for (const std::string& sub : listed_subcommands(o.out))
      paths.push_back(paths[i].empty() ? sub : paths[i] + " " + sub);
  }
  EXPECT_GE(checked, 27) << "the walk found fewer subcommands than canopy has (topo list, cache info, ...)";
}

TEST(FrontDoor, UnknownSubcommandNamesTheNearestOne) {
  const struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"plna", "canopy: unknown subcommand 'plna' (did you mean 'plan'?); run `canopy --help` for the list"},
      {"topo shwo", "canopy topo: unknown subcommand 'shwo' (did you mean 'show'?)"},
      {"cache lst", "canopy cache: unknown subcommand 'lst' (did you mean 'list'?)"},
      {"algo verfy ring-allreduce", "canopy algo: unknown subcommand 'verfy' (did you mean 'verify'?)"},
      {"bench-comapre a.json b.json", "canopy: unknown subcommand 'bench-comapre' (did you mean 'bench-compare'?)"},
  };
  for (const auto& c : cases) {
    const Outcome o = canopy(c.args);
    EXPECT_EQ(o.status, 2) << c.args;
    EXPECT_THAT(o.err, HasSubstr(c.message)) << c.args;
    EXPECT_THAT(o.out, IsEmpty()) << c.args;
  }
}

TEST(FrontDoor, UnknownSubcommandBesideHelpIsAnErrorNotTheHelp) {
  for (const char* args : {"frobnicate --help", "--help frobnicate", "frobnicate", "frobnicate -h"}) {
    const Outcome o = canopy(args);
    EXPECT_EQ(o.status, 2) << args;
    EXPECT_THAT(o.out, IsEmpty()) << args << ": printed help and hid the mistake";
    // Nothing is close to 'frobnicate': the message lists the subcommands instead of guessing.
    EXPECT_THAT(o.err, HasSubstr("canopy: unknown subcommand 'frobnicate'; the subcommands are topo, plan, ")) << args;
    EXPECT_THAT(o.err, HasSubstr("bench-compare")) << args;
    EXPECT_THAT(o.err, Not(HasSubstr("did you mean"))) << args;
  }
  const Outcome o = canopy("topo shwo --help");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.err, HasSubstr("unknown subcommand 'shwo' (did you mean 'show'?)"));
  EXPECT_THAT(o.out, IsEmpty());
}

TEST(FrontDoor, UnknownOptionNamesTheNearestOne) {
  const struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"plan --topolgy x", "canopy plan: unknown option '--topolgy' (did you mean '--topology'?)"},
      {"plan -t dgx1-v100 -c allreduce --jsn", "canopy plan: unknown option '--jsn' (did you mean '--json'?)"},
      {"plan --topology=dgx2 --colective=allreduce", "unknown option '--colective' (did you mean '--collective'?)"},
      {"topo show dgx1-v100 --gpu 0,1", "canopy topo show: unknown option '--gpu' (did you mean '--gpus'?)"},
      {"--verison", "canopy: unknown option '--verison' (did you mean '--version'?)"},
      {"plan --help --frobnicate", "canopy plan: unknown option '--frobnicate'; run `canopy plan --help`"},
  };
  for (const auto& c : cases) {
    const Outcome o = canopy(c.args);
    EXPECT_EQ(o.status, 2) << c.args;
    EXPECT_THAT(o.err, HasSubstr(c.message)) << c.args;
    EXPECT_THAT(o.out, IsEmpty()) << c.args;
  }
}

TEST(FrontDoor, MissingSubcommandShowsTheHelpAndListsThem) {
  Outcome o = canopy("");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.err, HasSubstr("Usage: canopy [OPTIONS] SUBCOMMAND"));
  EXPECT_THAT(o.err, HasSubstr("canopy: a subcommand is required, one of: topo, plan, gen, "));
  EXPECT_THAT(o.out, IsEmpty());
  o = canopy("topo");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.err, HasSubstr("Usage: canopy topo"));
  EXPECT_THAT(o.err, HasSubstr("canopy topo: a subcommand is required, one of: list, show, check, dot, import\n"));
  o = canopy("msccl");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.err, HasSubstr("canopy msccl: a subcommand is required, one of: export, import\n"));
}

TEST(FrontDoor, OtherUsageMistakesNameTheCommand) {
  Outcome o = canopy("topo list extra");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.err, HasSubstr("canopy topo list: unexpected argument 'extra' (it takes options only)"));
  o = canopy("plan -c allreduce");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.err, HasSubstr("canopy plan: --topology is required\nRun `canopy plan --help`"));
  o = canopy("--version");
  EXPECT_EQ(o.status, 0);
  EXPECT_THAT(o.out, HasSubstr("canopy "));
}

}  // namespace
}  // namespace canopy
