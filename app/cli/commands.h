// The subcommands of `kiln`. Each registers itself on the CLI11 app and runs through engine/api.
#pragma once

#include <CLI/CLI.hpp>

#include "app/cli/common_options.h"

namespace kiln::cli {

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

}  // namespace kiln::cli
