#include "engine/api/options.h"

#include <cctype>
#include <sstream>

#include "engine/capture/modes.h"
#include "engine/ir/graph.h"
#include "engine/runtime/own_products.h"

namespace kiln::api {

namespace {

ir::DType parse_default_dtype(const std::string& text) {
  auto dt = ir::parse_dtype(text);
  if (!dt) throw Error("--dtype '" + text + "': unknown dtype (use float32, float64, float16, bfloat16, int64, ...)");
  return *dt;
}

}  // namespace

std::vector<InputSpec> parse_inputs(const std::vector<std::string>& texts, const std::string& default_dtype) {
  const ir::DType dt = parse_default_dtype(default_dtype);
  std::vector<InputSpec> specs;
  for (const auto& t : texts) specs.push_back(parse_input_spec(t, dt));
  return specs;
}

std::vector<InputSpec> parse_call(const std::string& text, const std::string& default_dtype) {
  const ir::DType dt = parse_default_dtype(default_dtype);
  std::istringstream in(text);
  std::vector<InputSpec> specs;
  for (std::string t; in >> t;) specs.push_back(parse_input_spec(t, dt));
  return specs;
}

const std::vector<std::string>& compile_modes() { return capture::compile_modes(); }

void check_mode(const std::string& mode) {
  if (!capture::is_compile_mode(mode))
    throw Error("--mode '" + mode + "': use default, reduce-overhead or max-autotune");
}

std::optional<bool> parse_dynamic(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  if (text != "auto") throw Error("--dynamic '" + text + "': use auto, true or false");
  return std::nullopt;
}

void check_linear_bias(const std::string& where) {
  if (where != "auto" && where != "epilogue" && where != "readers")
    throw Error("--linear-bias '" + where + "': use auto, epilogue or readers");
}

void check_conv_weights(const std::string& weights) {
  if (weights != "auto" && weights != "kept" && weights != "per-call")
    throw Error("--conv-weights '" + weights + "': use auto, kept or per-call");
}

void check_row_stages(const std::string& stages) {
  if (stages != "auto" && stages != "separate") throw Error("--row-stages '" + stages + "': use auto or separate");
}

void check_split_reductions(const std::string& split) {
  if (split != "auto" && split != "on" && split != "off")
    throw Error("--split-reductions '" + split + "': use auto, on or off");
}

void check_pool_windows(const std::string& windows) {
  if (windows != "auto" && windows != "on" && windows != "off")
    throw Error("--pool-windows '" + windows + "': use auto, on or off");
}

void check_products(const std::string& products) {
  if (products != "auto" && products != "library" && products != "kiln")
    throw Error("--products '" + products + "': use auto, library or kiln");
}

void check_product_bound() { (void)runtime::own_product_max_flop(); }

void check_depthwise(const std::string& depthwise) {
  if (depthwise != "auto" && depthwise != "generated" && depthwise != "extern")
    throw Error("--depthwise '" + depthwise + "': use auto, generated or extern");
}

void check_attention(const std::string& attention) {
  if (attention != "auto" && attention != "fused" && attention != "separate")
    throw Error("--attention '" + attention + "': use auto, fused or separate");
}

void check_cuda_arch(const std::string& arch) {
  bool ok = arch.size() >= 5 && arch.size() <= 7 && arch.compare(0, 3, "sm_") == 0;
  size_t digits = 0;
  for (size_t i = 3; ok && i < arch.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(arch[i])) && digits == i - 3) ++digits;
    else ok = i + 1 == arch.size() && (arch[i] == 'a' || arch[i] == 'f');
  }
  if (!ok || digits < 2 || digits > 3) throw Error("--cuda-arch '" + arch + "': use sm_ and the architecture's number, as sm_90");
}

void check_conv_layout(const std::string& layout) {
  if (layout != "auto" && layout != "channels-last" && layout != "contiguous")
    throw Error("--conv-layout '" + layout + "': use auto, channels-last or contiguous");
}

}  // namespace kiln::api
