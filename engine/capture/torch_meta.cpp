#include "engine/capture/torch_meta.h"

#include <sstream>

#include "engine/base/error.h"

namespace kiln::capture {

ir::DType to_ir_dtype(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return ir::DType::Float32;
    case c10::ScalarType::Double: return ir::DType::Float64;
    case c10::ScalarType::Half: return ir::DType::Float16;
    case c10::ScalarType::BFloat16: return ir::DType::BFloat16;
    case c10::ScalarType::Long: return ir::DType::Int64;
    case c10::ScalarType::Int: return ir::DType::Int32;
    case c10::ScalarType::Short: return ir::DType::Int16;
    case c10::ScalarType::Char: return ir::DType::Int8;
    case c10::ScalarType::Byte: return ir::DType::UInt8;
    case c10::ScalarType::Bool: return ir::DType::Bool;
    default: return ir::DType::Unknown;
  }
}

c10::ScalarType to_scalar_type(ir::DType t) {
  switch (t) {
    case ir::DType::Float32: return c10::ScalarType::Float;
    case ir::DType::Float64: return c10::ScalarType::Double;
    case ir::DType::Float16: return c10::ScalarType::Half;
    case ir::DType::BFloat16: return c10::ScalarType::BFloat16;
    case ir::DType::Int64: return c10::ScalarType::Long;
    case ir::DType::Int32: return c10::ScalarType::Int;
    case ir::DType::Int16: return c10::ScalarType::Short;
    case ir::DType::Int8: return c10::ScalarType::Char;
    case ir::DType::UInt8: return c10::ScalarType::Byte;
    case ir::DType::Bool: return c10::ScalarType::Bool;
    case ir::DType::Unknown: break;
  }
  throw Error("dtype: unknown dtype has no LibTorch scalar type");
}

static std::string device_str(const c10::Device& d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

// The value's type as TorchScript writes it, without asking LibTorch to infer the type of an
// undefined tensor (an absent optional inside a tuple: attention weights with need_weights=False),
// which it refuses.
static std::string type_name_of(const c10::IValue& v) {
  if (v.isTensor()) return "Tensor";
  if (v.isTuple()) {
    std::string s = "Tuple[";
    const auto& elems = v.toTupleRef().elements();
    for (size_t i = 0; i < elems.size(); ++i) s += (i ? ", " : "") + type_name_of(elems[i]);
    return s + "]";
  }
  if (v.isList()) return "List[" + v.toList().elementType()->annotation_str() + "]";
  try {
    return v.type()->annotation_str();
  } catch (const std::exception&) {
    return v.tagKind();
  }
}

ir::ValueMeta meta_of(const c10::IValue& v) {
  using K = ir::ValueMeta::Kind;
  ir::ValueMeta m;
  if (v.isTensor()) {
    const auto& t = v.toTensor();
    m.kind = K::Tensor;
    m.type_name = "Tensor";
    if (!t.defined()) return m;
    m.dtype = to_ir_dtype(t.scalar_type());
    for (auto s : t.sizes()) m.shape.push_back(ir::Dim::concrete(s));
    if (t.layout() == c10::kStrided)
      for (auto s : t.strides()) m.stride.push_back(s);
    m.device = device_str(t.device());
    m.requires_grad = t.requires_grad();
  } else if (v.isInt()) {
    m.kind = K::Int;
    m.type_name = "int";
    m.scalar_value = std::to_string(v.toInt());
  } else if (v.isDouble()) {
    m.kind = K::Float;
    m.type_name = "float";
    std::ostringstream os;
    os << v.toDouble();
    m.scalar_value = os.str();
  } else if (v.isBool()) {
    m.kind = K::Bool;
    m.type_name = "bool";
    m.scalar_value = v.toBool() ? "True" : "False";
  } else if (v.isString()) {
    m.kind = K::Str;
    m.type_name = "str";
  } else if (v.isNone()) {
    m.kind = K::None;
    m.type_name = "NoneType";
  } else if (v.isDevice()) {
    m.kind = K::Device;
    m.type_name = "Device";
    m.scalar_value = device_str(v.toDevice());
  } else if (v.isList()) {
    m.kind = K::List;
    m.type_name = type_name_of(v);
  } else if (v.isTuple()) {
    m.kind = K::Tuple;
    m.type_name = type_name_of(v);
  } else {
    m.kind = K::Other;
    m.type_name = v.tagKind();
  }
  return m;
}

ir::ValueMeta meta_of_type(const c10::TypePtr& t) {
  using K = ir::ValueMeta::Kind;
  ir::ValueMeta m;
  m.type_name = t->annotation_str();
  if (auto tt = t->cast<c10::TensorType>()) {
    m.kind = K::Tensor;
    m.type_name = "Tensor";
    if (auto st = tt->scalarType()) m.dtype = to_ir_dtype(*st);
    if (auto sizes = tt->sizes().concrete_sizes())
      for (auto s : *sizes) m.shape.push_back(ir::Dim::concrete(s));
    if (auto dev = tt->device()) m.device = device_str(*dev);
  } else if (t->kind() == c10::TypeKind::IntType) {
    m.kind = K::Int;
  } else if (t->kind() == c10::TypeKind::FloatType) {
    m.kind = K::Float;
  } else if (t->kind() == c10::TypeKind::BoolType) {
    m.kind = K::Bool;
  } else if (t->kind() == c10::TypeKind::StringType) {
    m.kind = K::Str;
  } else if (t->kind() == c10::TypeKind::NoneType) {
    m.kind = K::None;
  } else if (t->kind() == c10::TypeKind::ListType) {
    m.kind = K::List;
  } else if (t->kind() == c10::TypeKind::TupleType) {
    m.kind = K::Tuple;
  } else if (t->kind() == c10::TypeKind::DeviceObjType) {
    m.kind = K::Device;
  } else {
    m.kind = K::Other;
  }
  return m;
}

std::optional<ir::Arg> literal_arg(const c10::IValue& iv) {
  if (iv.isNone()) return ir::Arg::none();
  if (iv.isBool()) return ir::Arg::boolean(iv.toBool());
  if (iv.isInt()) return ir::Arg::integer(iv.toInt());
  if (iv.isDouble()) return ir::Arg::real(iv.toDouble());
  if (iv.isString()) return ir::Arg::string(iv.toStringRef());
  if (iv.isDevice()) return ir::Arg::other("device(\"" + iv.toDevice().str() + "\")");
  if (iv.isIntList()) {
    std::vector<ir::Arg> items;
    for (auto x : iv.toIntVector()) items.push_back(ir::Arg::integer(x));
    return ir::Arg::list(std::move(items));
  }
  if (iv.isDoubleList()) {
    std::vector<ir::Arg> items;
    for (auto x : iv.toDoubleVector()) items.push_back(ir::Arg::real(x));
    return ir::Arg::list(std::move(items));
  }
  if (iv.isBoolList()) {
    std::vector<ir::Arg> items;
    for (auto x : iv.toBoolList()) items.push_back(ir::Arg::boolean(x));
    return ir::Arg::list(std::move(items));
  }
  return std::nullopt;
}

}  // namespace kiln::capture
