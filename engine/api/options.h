// The options the commands share, read from text and checked in one place for the command line and
// the workbench: example inputs with their default dtype, the compile mode, --dynamic and the
// convolution layout. Every function throws kiln::Error naming the option as the command line spells
// it and the value given ("--mode 'fast': use default, reduce-overhead or max-autotune").
//
// The device is checked where a model is loaded onto it (model::load_model, and profile's "auto"):
// it needs the machine's CUDA state, so it has no text-only check here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/ir/input_spec.h"

namespace kiln::api {

// One InputSpec per text ("8x64", "8x64:float16", "8x128:int64[0,30522)"); a text that names no dtype
// gets `default_dtype` ("float32", "half", "bf16", ...). The default dtype is checked even when no
// text needs it, so a mistyped --dtype is never silently ignored.
std::vector<InputSpec> parse_inputs(const std::vector<std::string>& texts, const std::string& default_dtype);

// One forward call with several arguments, separated by spaces: "4x64 4x8:int64".
std::vector<InputSpec> parse_call(const std::string& text, const std::string& default_dtype);

// The compile modes, in the order they are shown: default, reduce-overhead, max-autotune.
// (profile's "eager" is its baseline run, not a compile mode.)
const std::vector<std::string>& compile_modes();
// Throws unless `mode` is one of compile_modes().
void check_mode(const std::string& mode);

// --dynamic: "auto" is unset (static until a size changes, then dynamic), "true" every dimension
// symbolic, "false" every size static.
std::optional<bool> parse_dynamic(const std::string& text);

// --conv-layout: auto (channels-last on the GPU), channels-last or contiguous.
void check_conv_layout(const std::string& layout);
void check_conv_weights(const std::string& weights);  // auto, kept, per-call
void check_row_stages(const std::string& stages);     // auto, separate
void check_split_reductions(const std::string& split);  // auto, on, off
void check_pool_windows(const std::string& windows);  // auto, on, off
void check_products(const std::string& products);    // auto, library, kiln
// KILN_OWN_PRODUCT_MAX_GFLOP, where set, is a positive number (runtime/own_products.h): every command that compiles
// a model refuses another value before it starts.
void check_product_bound();
void check_attention(const std::string& attention);   // auto, fused, separate
void check_depthwise(const std::string& depthwise);   // auto, generated, extern
void check_linear_bias(const std::string& where);  // auto, epilogue, readers
// --cuda-arch: "sm_" and two or three digits, an "a" or "f" after them allowed (sm_90, sm_100a); nothing else reaches
// NVRTC's options or the kernel cache's file names.
void check_cuda_arch(const std::string& arch);

}  // namespace kiln::api
