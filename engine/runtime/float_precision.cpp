#include "engine/runtime/float_precision.h"

#include <ATen/Context.h>

#include <functional>

#include "engine/base/error.h"
#include "engine/model/model_impl.h"

namespace kiln::runtime {

void set_float32_matmul_precision(const std::string& precision) {
  if (precision != "highest" && precision != "high" && precision != "medium")
    throw Error("float32 matmul precision '" + precision + "': use highest, high or medium");
  at::globalContext().setFloat32MatmulPrecision(precision);
}

std::string float32_matmul_precision() {
  switch (at::globalContext().float32MatmulPrecision()) {
    case at::Float32MatmulPrecision::HIGHEST: return "highest";
    case at::Float32MatmulPrecision::HIGH: return "high";
    case at::Float32MatmulPrecision::MEDIUM: return "medium";
  }
  return "highest";
}

bool cudnn_allows_tf32() { return at::globalContext().allowTF32CuDNN(); }
void set_cudnn_allows_tf32(bool allow) { at::globalContext().setAllowTF32CuDNN(allow); }

std::string float32_precision_text() {
  return "float32 matmul precision " + float32_matmul_precision() + "; cuDNN convolutions " +
         (cudnn_allows_tf32() ? "may use TF32" : "in float32");
}

bool tf32_in_effect(const model::Model& model) {
  if (model.device() == "cpu" || !model.impl || !model.impl->graph) return false;
  bool conv = false, matmul = false;
  std::function<void(const torch::jit::Block*)> walk = [&](const torch::jit::Block* b) {
    for (const auto* n : b->nodes()) {
      const std::string k = n->kind().toQualString();
      conv |= k.rfind("aten::conv", 0) == 0 || k == "aten::_convolution" || k == "aten::cudnn_convolution";
      matmul |= k == "aten::linear" || k == "aten::mm" || k == "aten::bmm" || k == "aten::matmul" ||
                k == "aten::addmm" || k == "aten::baddbmm" || k == "aten::einsum";
      for (const auto* sub : n->blocks()) walk(sub);
    }
  };
  walk(model.impl->graph->block());
  return (conv && cudnn_allows_tf32()) || (matmul && float32_matmul_precision() != "highest");
}

}  // namespace kiln::runtime
