#include "engine/runtime/example_inputs.h"

#include <torch/csrc/jit/runtime/graph_executor.h>

#include <random>
#include <sstream>
#include <string>

#include <ATen/CPUGeneratorImpl.h>

#include "engine/base/error.h"
#include "engine/capture/torch_meta.h"

namespace kiln::runtime {

std::vector<at::Tensor> make_inputs(const std::vector<InputSpec>& specs, uint64_t seed) {
  if (seed == 0) seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<at::Tensor> out;
  for (const auto& s : specs) {
    auto st = capture::to_scalar_type(s.dtype);
    at::Tensor t;
    if (at::isFloatingType(st)) {
      t = at::randn(s.shape, gen, at::TensorOptions().dtype(at::kFloat)).to(st);
    } else if (st == at::kBool) {
      t = at::randint(s.low.value_or(0), s.high.value_or(2), s.shape, gen, at::TensorOptions().dtype(at::kLong)).to(at::kBool);
    } else {
      t = at::randint(s.low.value_or(0), s.high.value_or(10), s.shape, gen, at::TensorOptions().dtype(st));
    }
    out.push_back(t);
  }
  return out;
}

namespace {

// The innermost frame of TorchScript's "original code" traceback outside PyTorch's own modules,
// as "file.py:LINE (code)"; empty when the message has none.
std::string user_frame(const std::string& msg) {
  size_t at = msg.find("original code");
  if (at == std::string::npos) return "";
  std::istringstream lines(msg.substr(at));
  std::string where, code, frame;
  bool user = false;
  std::string previous;
  for (std::string l; std::getline(lines, l);) {
    size_t file = l.find("File \"");
    if (file != std::string::npos) {
      size_t end = l.find('"', file + 6);
      size_t num = l.find(", line ", end == std::string::npos ? file : end);
      if (end == std::string::npos || num == std::string::npos) continue;
      std::string path = l.substr(file + 6, end - file - 6);
      user = path.find("/torch/") == std::string::npos;
      if (user) {
        std::string n = l.substr(num + 7);
        n = n.substr(0, n.find(','));
        frame = path.substr(path.find_last_of('/') + 1) + ":" + n;
        where = frame;
        code.clear();
      }
    } else if (user && l.find("<--- HERE") != std::string::npos) {
      size_t b = previous.find_first_not_of(" \t");
      if (b != std::string::npos) code = previous.substr(b);
      where = frame + (code.empty() ? "" : " (" + code + ")");
      user = false;
    }
    previous = l;
  }
  return where;
}

// TorchScript's message is a traceback ending in "RuntimeError: <what>": keep that last line, and
// say where in the model's source it happened.
[[noreturn]] void throw_forward_failed(const std::string& model_path, const std::vector<InputSpec>& specs,
                                       const std::string& msg) {
  std::string line;
  std::istringstream lines(msg);
  for (std::string l; std::getline(lines, l);)
    if (l.find_first_not_of(" \t") != std::string::npos) line = l;
  const std::string where = user_frame(msg);
  std::string shapes;
  for (const auto& s : specs) shapes += (shapes.empty() ? "" : ", ") + s.str();
  throw Error(model_path + ": forward on inputs [" + shapes + "] failed" + (where.empty() ? "" : " at " + where) + ": " + line);
}

}  // namespace

c10::IValue eager_forward(torch::jit::Module& module, std::vector<c10::IValue> args, const std::string& model_path,
                          const std::vector<InputSpec>& specs) {
  try {
    return eager_call(module, std::move(args));
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    throw_forward_failed(model_path, specs, e.msg());
  } catch (const std::exception& e) {  // the interpreter's JITException and std::runtime_error
    throw_forward_failed(model_path, specs, e.what());
  }
}

c10::IValue eager_call(torch::jit::Module& module, std::vector<c10::IValue> args) {
  torch::jit::GraphOptimizerEnabledGuard eager(false);
  return module.forward(std::move(args));
}

}  // namespace kiln::runtime
