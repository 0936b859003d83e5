// [ext.command] of a manifest or lock: the project's own smoke command (argv, timeout, tail,
// working directory, environment).
#include "project/lockfile_reader.h"

#include <regex>

#include "base/strings.h"

namespace trainlock {

namespace {

// [ext.command] argv: the strings exactly as the program will get them. Unlike other string
// arrays, values may repeat ("--lr 1 --warmup 1") and be empty (an argument ""). A NUL cannot
// be passed: the kernel would end the argument there and run something else than the lock says.
std::vector<std::string> ReadArgv(TomlFields& f, const toml::array& array) {
  std::vector<std::string> argv;
  for (const toml::node& element : array) {
    const auto* s = element.as_string();
    if (!s) {
      f.Error(PosOf(element), "'ext.command.argv' must contain only strings, found " +
                                  TomlTypeName(element.type()));
    } else if (s->get().find('\0') != std::string::npos) {
      f.Error(PosOf(element),
              "'ext.command.argv' argument " + std::to_string(argv.size()) +
                  " has a NUL character in it",
              "a program's arguments cannot carry one: it would end the argument there");
    }
    argv.push_back(s ? s->get() : std::string());
  }
  return argv;
}

}  // namespace

void LockfileReader::ReadExt(const toml::table& t) {
  TomlFields ext = Fields(t, "ext");
  const toml::table* table = ext.Table("command", Need::kRequired);
  ext.Finish();
  if (!table) return;
  TomlFields f = Fields(*table, "ext.command");
  ExtCommand command;
  if (const toml::array* argv = f.Array("argv", Need::kRequired)) {
    command.argv = ReadArgv(f, *argv);
    if (command.argv.empty() || (argv->front().is_string() && command.argv.front().empty())) {
      f.Error(f.Pos("argv"), "'ext.command.argv' must name a program",
              "e.g. argv = [\"python3\", \"train.py\", \"--max-steps\", \"2\"]");
    }
  }
  command.timeout_s = f.Number("timeout-s", Need::kOptional, 1, 86400).value_or(command.timeout_s);
  command.tail_lines =
      f.Integer("tail-lines", Need::kOptional, 1, 1000).value_or(command.tail_lines);
  if (auto cwd = f.String("cwd", Need::kOptional)) {
    CheckRelativePath(f, "cwd", *cwd, f.Pos("cwd"));
    command.cwd = *cwd;
  }
  if (const toml::table* env = f.Table("env", Need::kOptional)) {
    for (auto&& [key, node] : *env) {
      std::string name(key.str());
      static const std::regex kEnvName(R"(^[A-Za-z_][A-Za-z0-9_]*$)");
      if (!std::regex_match(name, kEnvName)) {
        diags_.Error(path_, PosOf(key.source()),
                     "'ext.command.env' key " + Quoted(name) + " is not an environment name");
      } else if (const auto* value = node.as_string()) {
        if (value->get().find('\0') != std::string::npos) {
          diags_.Error(path_, PosOf(node),
                       "'ext.command.env." + name + "' has a NUL character in it",
                       "the environment cannot carry one: it would end the value there");
        }
        command.env[name] = value->get();
      } else {
        diags_.Error(
            path_, PosOf(node),
            "'ext.command.env." + name + "' must be a string, not " + TomlTypeName(node.type()));
      }
    }
  }
  f.Finish();
  spec_.ext_command = std::move(command);
}

}  // namespace trainlock
