// The subcommands of `kiln`. Each registers itself on the CLI11 app and runs through engine/api.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace kiln::cli {

// Registers the subcommand; returns the function main() calls when it was chosen.
std::function<int()> add_inspect(CLI::App& app);
std::function<int()> add_explain(CLI::App& app);
std::function<int()> add_compile(CLI::App& app);
std::function<int()> add_check(CLI::App& app);
std::function<int()> add_profile(CLI::App& app);
std::function<int()> add_report(CLI::App& app);
std::function<int()> add_trace(CLI::App& app);
std::function<int()> add_stats(CLI::App& app);
std::function<int()> add_import(CLI::App& app);

}  // namespace kiln::cli
