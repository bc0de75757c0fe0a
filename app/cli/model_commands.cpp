#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "app/cli/commands.h"

namespace kiln::cli {

namespace fs = std::filesystem;

bool is_model_command(const std::string& name) {
  for (const auto& c : kModelCommands)
    if (name == c.name) return true;
  return false;
}

namespace {

#ifndef KILN_MODEL_COMMANDS_FROM_BIN
#define KILN_MODEL_COMMANDS_FROM_BIN "../libexec/kiln"
#endif

// Where kiln-model is: beside this executable (a build tree), else where the installation puts it
// relative to the executable's directory (../libexec/kiln). Empty when neither.
fs::path model_commands_binary(std::string* looked) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    *looked = "/proc/self/exe (" + ec.message() + ")";
    return {};
  }
  const fs::path dir = self.parent_path();
  for (const fs::path& candidate : {dir / "kiln-model", (dir / KILN_MODEL_COMMANDS_FROM_BIN / "kiln-model").lexically_normal()}) {
    if (!looked->empty()) *looked += " or ";
    *looked += candidate.string();
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

}  // namespace

int exec_model_commands(char** argv) {
  std::string looked;
  const fs::path binary = model_commands_binary(&looked);
  if (binary.empty()) {
    std::string names;
    for (const auto& c : kModelCommands) names += (names.empty() ? "" : ", ") + std::string(c.name);
    std::cerr << "kiln: error: " << looked << ": not found; the commands that load a model (" << names
              << ") run in it\n";
    return kExitError;
  }
  std::cout.flush();
  std::cerr.flush();
  ::execv(binary.c_str(), argv);  // the same arguments; its messages name itself "kiln" too
  const int err = errno;
  std::cerr << "kiln: error: " << binary.string() << ": cannot run (" << std::strerror(err) << ")\n";
  return kExitError;
}

Command add_model_command(CLI::App& app, const char* name, const char* description, char** argv) {
  CLI::App* cmd = app.add_subcommand(name, description);
  cmd->allow_extras();
  cmd->prefix_command();
  return {cmd, [argv] { return exec_model_commands(argv); }};
}

}  // namespace kiln::cli
