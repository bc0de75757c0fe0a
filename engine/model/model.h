// Loading TorchScript archives: the only place that calls torch::jit::load and freeze.
//
// load_model(path)
//   pre:  path names a TorchScript archive written by torch.jit.save (scripted or traced).
//   post: the module is in eval() mode, frozen (parameters folded into constants, methods
//         inlined, no numerics-changing rewrites) and has a forward method.
//   error: kiln::Error whose message starts with the path and says what is wrong:
//         missing, a directory, unreadable, empty, not a zip, a zip that is not a TorchScript
//         archive, truncated or corrupt, an operator this LibTorch lacks, no forward method.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::model {

struct LoadedModel;  // defined in model_impl.h (LibTorch types)

struct Model {
  std::shared_ptr<const LoadedModel> impl;

  const std::string& path() const;
  int64_t parameter_count() const;  // elements in all parameters
  int64_t buffer_count() const;     // elements in all buffers (running stats, ...)
  std::vector<std::string> forward_arg_names() const;  // without self
  const std::string& device() const;  // where its parameters live: "cpu", "cuda"...
  bool exported_program() const;      // read from a torch.export archive (.pt2), not TorchScript
};

// device: "cpu" or "cuda" / "cuda:N" (parameters are loaded there before freezing).
Model load_model(const std::string& path, const std::string& device = "cpu");

// Whether LibTorch here can run on a CUDA device ("" if yes, else why not).
std::string cuda_unavailable_reason();

std::string libtorch_version();  // "1.13.0"

}  // namespace kiln::model
