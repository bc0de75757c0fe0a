// Conversions between LibTorch values/types and the IR's meta (dtype, shape, stride, device).
#pragma once

#include <optional>
#include <string>

#include "engine/ir/graph.h"
#include "engine/model/torch_compat.h"

namespace kiln::capture {

ir::DType to_ir_dtype(c10::ScalarType t);
c10::ScalarType to_scalar_type(ir::DType t);  // throws kiln::Error for Unknown

// Meta of a runtime value (tensor, scalar, list, ...).
ir::ValueMeta meta_of(const c10::IValue& v);
// Meta from the static type alone (no run): kind and type name, tensor dtype/shape when complete.
ir::ValueMeta meta_of_type(const c10::TypePtr& t);

// A TorchScript constant as an IR literal argument (None, bool, int, float, str, device, int/float/bool
// lists); nullopt for tensors and anything else.
std::optional<ir::Arg> literal_arg(const c10::IValue& iv);

}  // namespace kiln::capture
