// LibTorch's print() handler replaced for a scope: a model's print() output during a reference or
// checking run is not the command's output. Restored on every way out of the scope.
#pragma once

#include <torch/csrc/jit/runtime/print_handler.h>

#include <string>
#include <utility>

#include "engine/base/non_copyable.h"

namespace kiln::model {

class ScopedPrintHandler : NonCopyable {
 public:
  // By default the prints go nowhere.
  explicit ScopedPrintHandler(torch::jit::PrintHandler handler = [](const std::string&) {})
      : saved_(torch::jit::getPrintHandler()) {
    torch::jit::setPrintHandler(std::move(handler));
  }
  ~ScopedPrintHandler() { torch::jit::setPrintHandler(saved_); }

 private:
  torch::jit::PrintHandler saved_;
};

}  // namespace kiln::model
