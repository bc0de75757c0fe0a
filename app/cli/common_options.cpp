#include "app/cli/common_options.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace kiln::cli {

int run_command(const Command& command) {
  int status = 0;
  try {
    status = command.run();
  } catch (const Error& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return command.error_status;
  } catch (const std::exception& e) {
    // One line: a library's backtrace is for a bug report, not for the terminal.
    // KILN_BACKTRACE=1 (with TORCH_SHOW_CPP_STACKTRACES=1 for LibTorch's) prints it all.
    std::string what = e.what();
    if (!std::getenv("KILN_BACKTRACE")) what = what.substr(0, what.find('\n'));
    std::cerr << "kiln: internal error: " << what << "\n";
    return kExitInternalError;
  }
  // Output that never arrived (a full disk, /dev/full, a closed pipe) is an error, not a success.
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::cerr << "kiln: error: writing to standard output failed (" << std::strerror(errno) << ")\n";
    return status == 0 ? kExitError : status;
  }
  return status;
}

void add_model_options(CLI::App& cmd, ModelArgs& a, InputIs input) {
  cmd.add_option("model", a.path, "TorchScript archive (.pt) or torch.export program (.pt2)")->required();
  if (input == InputIs::Argument) {
    cmd.add_option("-i,--input", a.inputs, kInputSpecHelp)->required();
  } else {
    cmd.add_option("-i,--input", a.inputs,
                   std::string("One call with one argument (repeat: one call each, in order). ") + kInputSpecHelp);
  }
  cmd.add_option("--dtype", a.dtype, "Default dtype of the inputs")->capture_default_str();
}

void add_precision_option(CLI::App& cmd, PrecisionArgs& a) {
  cmd.add_option("--float32-matmul-precision", a.float32_matmul,
                 "float32 matmul precision on the GPU, as torch.set_float32_matmul_precision: highest (PyTorch's "
                 "default: float32 math), high or medium (TF32 tensor cores); cuDNN convolutions use TF32 as PyTorch "
                 "allows by default. The tolerance follows: float32 results that went through TF32 are held to rtol "
                 "2e-3, atol 2e-3")
      ->capture_default_str();
}

void add_dynamic_option(CLI::App& cmd, std::string& dynamic, const char* default_value) {
  dynamic = default_value;
  cmd.add_option("--dynamic", dynamic, "auto (dynamic after the first size change), true or false")
      ->capture_default_str();
}

void add_backend_options(CLI::App& cmd, BackendArgs& a, const char* dynamic_default) {
  cmd.add_option("--backend", a.backend, "kiln (fusing C++ codegen), aot_eager, eager, or a plugin's")
      ->capture_default_str();
  cmd.add_option("--mode", a.mode, "default, reduce-overhead or max-autotune")->capture_default_str();
  add_dynamic_option(cmd, a.dynamic, dynamic_default);
  cmd.add_option("--plugin", a.plugins, "Load backends from a shared library");
}

void add_device_option(CLI::App& cmd, std::string& device, DeviceDefault default_device) {
  if (default_device == DeviceDefault::Cpu) {
    device = "cpu";
    cmd.add_option("--device", device, "cpu (C++ kernels) or cuda (CUDA kernels through NVRTC)")->capture_default_str();
  } else {
    device = "auto";
    cmd.add_option("--device", device, "auto (cuda when available), cpu or cuda")->capture_default_str();
  }
}

void check_count(const std::string& option, int value, int most, const std::string& why_most) {
  if (value < 1) throw Error(option + " " + std::to_string(value) + ": must be at least 1");
  if (value > most) throw Error(option + " " + std::to_string(value) + ": at most " + std::to_string(most) + why_most);
}

void add_json_flag(CLI::App& cmd, bool& json) { cmd.add_flag("--json", json, "Print JSON instead of text"); }

void add_attention_option(CLI::App& cmd, std::string& attention) {
  cmd.add_option("--attention", attention,
                 "Attention written as matmul, scale, mask, softmax, matmul: auto (float16 and bfloat16 chains on "
                 "cuda as one scaled_dot_product_attention call, the heads read in place), fused (float32 chains too, "
                 "and on cpu, where the call runs eager's own steps) or separate (as written)")
      ->capture_default_str();
}

void add_depthwise_option(CLI::App& cmd, std::string& depthwise) {
  cmd.add_option("--depthwise", depthwise,
                 "Depthwise convolutions (one filter per channel, at most 7x7): auto (on cuda a generated kernel, "
                 "its batch norm and activation inside, instead of a cuDNN call), generated (cpu too) or extern "
                 "(LibTorch's convolution)")
      ->capture_default_str();
}

void add_pool_windows_option(CLI::App& cmd, std::string& windows) {
  cmd.add_option("--pool-windows", windows,
                 "Whether a max_pool2d is a window's kernel (the max of its taps written out; neighbouring outputs "
                 "share their taps) rather than a reduction over each window: auto (on cuda), on (the cpu too) or off")
      ->capture_default_str();
}

void add_products_option(CLI::App& cmd, std::string& products) {
  cmd.add_option("--products", products,
                 "Who computes the matrix products of 16-bit matrices on cuda: auto (cuBLAS; in default mode Kiln's own "
                 "tensor-core kernel for those up to KILN_OWN_PRODUCT_MAX_GFLOP where that is set), library (cuBLAS "
                 "always) or kiln (Kiln's kernel wherever it takes the product, every mode)")
      ->capture_default_str();
}

CLI::Option* add_output_option(CLI::App& cmd, std::string& path, const std::string& help) {
  return cmd.add_option("-o,--output", path, help);
}

void add_session_argument(CLI::App& cmd, std::string& session) {
  cmd.add_option("session", session, "Session file (.kiln) from kiln profile or kiln import")->required();
}

}  // namespace kiln::cli
