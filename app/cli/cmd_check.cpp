// kiln check MODEL.pt --input 8x64 [--backend kiln] [--mode default] [--attention A] [--rtol R] [--atol A] [--seed N]
//            [--json]
//
// Exit status: 0 when the compiled outputs match eager, 1 on a mismatch (with the report naming
// the first differing region and kernel), 2 when the check cannot run (bad model, inputs or options).
#include <iostream>
#include <memory>
#include <optional>

#include "app/cli/commands.h"
#include "engine/api/kiln.h"

namespace kiln::cli {

namespace {

struct CheckArgs {
  ModelArgs model;
  PrecisionArgs precision;
  BackendArgs backend;
  std::string attention = "auto";
  std::string depthwise = "auto";
  std::string pool_windows = "auto";
  std::string products = "auto";
  std::optional<double> rtol;  // unset: by dtype and precision
  std::optional<double> atol;
  uint64_t seed = 0;
  bool json = false;
};

int run(const CheckArgs& a) {
  a.precision.apply();
  auto specs = a.model.specs();
  api::CheckOptions o;
  a.backend.apply(o.capture);
  api::check_attention(a.attention);
  api::check_depthwise(a.depthwise);
  o.capture.attention = a.attention;
  o.capture.depthwise = a.depthwise;
  api::check_pool_windows(a.pool_windows);
  o.capture.pool_windows = a.pool_windows;
  api::check_products(a.products);
  o.capture.products = a.products;
  o.rtol = a.rtol;
  o.atol = a.atol;
  o.seed = a.seed;
  auto r = api::check(a.model.path, specs, o);
  std::cout << (a.json ? api::check_json(r) + "\n" : api::check_text(r));
  return r.match ? 0 : kExitCheckMismatch;
}

}  // namespace

Command add_check(CLI::App& app) {
  auto [cmd, args, command] = subcommand<CheckArgs>(app, "check", kCheckDescription);
  add_model_options(cmd, args.model);
  add_precision_option(cmd, args.precision);
  add_backend_options(cmd, args.backend, kCheckDynamicDefault);
  add_attention_option(cmd, args.attention);
  add_depthwise_option(cmd, args.depthwise);
  add_pool_windows_option(cmd, args.pool_windows);
  add_products_option(cmd, args.products);
  cmd.add_option("--rtol", args.rtol,
                 "Relative tolerance: |compiled - eager| <= atol + rtol |eager| (default: by the outputs' dtype: "
                 "float32 1e-4, float32 through TF32 2e-3, float16 1e-2, bfloat16 2e-2; integers exact)");
  cmd.add_option("--atol", args.atol,
                 "Absolute tolerance (default: by dtype: float32 1e-5, TF32 2e-3, float16 5e-3, bfloat16 2e-2; "
                 "16-bit ones times the largest |eager| value when it is above 1)");
  cmd.add_option("--seed", args.seed, "Seed of the random inputs (0: a fresh one, printed)")->capture_default_str();
  add_json_flag(cmd, args.json);
  // Bad input is exit status 2 here: 1 means a mismatch.
  return command(run, kExitCheckBadInput);
}

}  // namespace kiln::cli
