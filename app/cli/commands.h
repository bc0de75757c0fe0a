// The subcommands of `kiln`. Each registers itself on the CLI11 app and runs through engine/api.
#pragma once

#include <CLI/CLI.hpp>

#include "app/cli/common_options.h"

namespace kiln::cli {

// What the commands that load a model do (their help line; `kiln` lists them without loading LibTorch).
inline constexpr const char* kInspectDescription =
    "Load a TorchScript model, run it once on random inputs and print its graph with shapes, module paths and "
    "source lines, an op histogram and the parameter count.";
inline constexpr const char* kExplainDescription =
    "Run the model through Kiln's capture over a sequence of calls and report graphs, graph breaks (deduplicated, "
    "with lines and hints), guards and recompiles with their reasons.";
inline constexpr const char* kCompileDescription =
    "Capture and compile a model with a backend; print the kernels per region, what each fuses, extern and "
    "fallback calls, compile time by stage, and a check against LibTorch eager.";
inline constexpr const char* kCheckDescription =
    "Check a compiled model against LibTorch eager on the same random inputs; on a mismatch, name the first region "
    "and the first kernel whose outputs differ. Exit 0: match, 1: mismatch, 2: bad input.";
inline constexpr const char* kProfileDescription =
    "Run a model eagerly and in every compile mode, measure each (compile time, first call, steady state, kernels, "
    "host overhead, error vs eager) and write a session file.";

// Registers the subcommand; returns what main() runs when it was chosen.
Command add_inspect(CLI::App& app);
Command add_explain(CLI::App& app);
Command add_compile(CLI::App& app);
Command add_check(CLI::App& app);
Command add_profile(CLI::App& app);
Command add_report(CLI::App& app);
Command add_trace(CLI::App& app);
Command add_stats(CLI::App& app);
Command add_import(CLI::App& app);
Command add_diff(CLI::App& app);

// The commands that load a model, in `kiln --help`'s order: kiln-model runs them (below).
struct ModelCommand {
  const char* name;
  const char* description;
};
inline constexpr ModelCommand kModelCommands[] = {{"inspect", kInspectDescription},
                                                  {"explain", kExplainDescription},
                                                  {"compile", kCompileDescription},
                                                  {"check", kCheckDescription},
                                                  {"profile", kProfileDescription}};

// `kiln` itself links no LibTorch: the commands that load a model (inspect, explain, compile, check,
// profile) run in `kiln-model`, the same command line with every command, which `kiln` executes in its
// place. It is looked for beside `kiln` (a build tree), then in the installation's libexec/kiln/.
bool is_model_command(const std::string& name);
// Replaces this process with kiln-model given the same arguments; returns only on failure (after
// printing one line naming what is missing), with kExitError.
int exec_model_commands(char** argv);
// Lists a model command in `kiln --help` under its own description; chosen, it runs kiln-model.
Command add_model_command(CLI::App& app, const char* name, const char* description, char** argv);

}  // namespace kiln::cli
