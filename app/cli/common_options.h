// What the subcommands of `kiln` share: their common options, each declared once with its help
// text, and the run of a command with the error handling and exit statuses every command keeps.
// The values are read and checked by the engine (engine/api/options.h), as the workbench reads them.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/api/kiln.h"
#include "engine/api/options.h"

namespace kiln::cli {

// Exit statuses. A kiln::Error (a bad model, input, option or output) prints one line
// "kiln: error: <input>: <problem>" and exits kExitError, or kExitCheckBadInput for kiln check,
// whose 1 means a mismatch. A command line that does not parse exits kExitUsage for every command
// (CLI11's own codes, 106 for a missing option, would read as anything else); --help and --version 0.
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInternalError = 2;  // anything but a kiln::Error: a bug, not the input
inline constexpr int kExitOutputsDiffer = 3;  // compile and explain: outputs differ from eager
inline constexpr int kExitCheckMismatch = 1;
inline constexpr int kExitCheckBadInput = 2;

// A registered subcommand: its CLI11 app and the body main() runs when the command line chose it.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
  int error_status = kExitError;  // the exit status of a kiln::Error thrown by `run`
};

// What subcommand() makes: the CLI11 subcommand, the arguments its options write to, and `command`,
// which turns the body into the Command main() runs: command(body) runs body(args), a kiln::Error
// from it exiting `error_status`. The arguments live as long as that Command.
template <class Args>
struct Subcommand {
  struct MakeCommand {
    CLI::App* app;
    std::shared_ptr<const Args> args;
    template <class Body>
    Command operator()(Body body, int error_status = kExitError) const {
      return {app, [args = args, body] { return body(*args); }, error_status};
    }
  };
  CLI::App& cmd;
  Args& args;
  MakeCommand command;
};

// Adds the subcommand `name` to `app`, with a fresh Args for its options:
//   auto [cmd, args, command] = subcommand<XArgs>(app, "x", "What x does.");
//   ...options of cmd writing to args...
//   return command(run);
template <class Args>
Subcommand<Args> subcommand(CLI::App& app, const std::string& name, const std::string& description) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(name, description);
  return {*cmd, *args, {cmd, args}};
}

// Runs the command's body: a kiln::Error prints "kiln: error: <message>" and returns its
// error_status; any other exception prints its first line as an internal error (all of it with
// KILN_BACKTRACE=1) and returns kExitInternalError; output that never reached stdout (a full disk, a
// closed pipe) turns success into kExitError.
int run_command(const Command& command);

// The model file (positional), -i/--input (repeatable) and --dtype, the inputs' default dtype.
struct ModelArgs {
  std::string path;
  std::vector<std::string> inputs;
  std::string dtype = "float32";
  std::vector<InputSpec> specs() const { return api::parse_inputs(inputs, dtype); }
};
// What one --input is: one argument of the forward call (required), or, for explain, a call of its
// own with one argument (optional there: --call gives calls with several).
enum class InputIs { Argument, Call };
void add_model_options(CLI::App& cmd, ModelArgs& a, InputIs input = InputIs::Argument);

// --float32-matmul-precision; apply() sets it for the process before the model runs.
struct PrecisionArgs {
  std::string float32_matmul = "highest";  // PyTorch's default
  void apply() const { runtime::set_float32_matmul_precision(float32_matmul); }
};
void add_precision_option(CLI::App& cmd, PrecisionArgs& a);

// The default of --dynamic, by command. They differ on purpose, and only here:
// - compile and explain: auto, as torch.compile: static code first, dynamic after a size changes.
// - check: false. It checks one call on one set of shapes and pins the static specialization, so the
//   kernels it bisects are the ones a first compile of those shapes produces.
inline constexpr const char* kDynamicDefault = "auto";
inline constexpr const char* kCheckDynamicDefault = "false";
// --dynamic, starting at `default_value`.
void add_dynamic_option(CLI::App& cmd, std::string& dynamic, const char* default_value);

// --backend, --mode, --dynamic and --plugin: how compile and check compile the model.
struct BackendArgs {
  std::string backend = "kiln";
  std::string mode = "default";
  std::string dynamic;  // set by add_backend_options
  std::vector<std::string> plugins;
  // Checks --mode and --dynamic, loads the plugins (their backends become known) and sets the
  // backend, mode and dynamic of `o`.
  void apply(api::CompileOptions& o) const;
};
void add_backend_options(CLI::App& cmd, BackendArgs& a, const char* dynamic_default);

// --device. compile builds kernels for the device it is told (cpu unless asked); profile measures the
// model where it would run (cuda when there is one).
enum class DeviceDefault { Cpu, Auto };
void add_device_option(CLI::App& cmd, std::string& device, DeviceDefault default_device);

// A count option such as --checks or --iters: throws a kiln::Error naming `option` unless
// 1 <= value <= most; `why_most` follows "at most <most>" in that error.
void check_count(const std::string& option, int value, int most, const std::string& why_most);

// --json.
void add_json_flag(CLI::App& cmd, bool& json);
// --attention auto|fused|separate (lowering/attention.h), checked by api::check_attention when the command runs.
void add_attention_option(CLI::App& cmd, std::string& attention);
// --depthwise auto|generated|extern (lowering::LowerOptions::depthwise), checked by api::check_depthwise.
void add_depthwise_option(CLI::App& cmd, std::string& depthwise);
// --pool-windows auto|on|off (lowering::LowerOptions::pool_windows), checked by api::check_pool_windows.
void add_pool_windows_option(CLI::App& cmd, std::string& windows);
// --products auto|library|kiln (runtime/cuda/half_gemm.h), checked by api::check_products.
void add_products_option(CLI::App& cmd, std::string& products);

// -o/--output; the caller says what is written and whether it is required.
CLI::Option* add_output_option(CLI::App& cmd, std::string& path, const std::string& help);

// The session file (positional) of report, trace and stats.
void add_session_argument(CLI::App& cmd, std::string& session);

}  // namespace kiln::cli
