// The shared option parser of the command line and the workbench (engine/api/options.h): example
// inputs with their default dtype, the compile mode, --dynamic and the convolution layout.
#include "engine/api/options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "engine/runtime/own_products.h"
#include "tests/support/paths.h"

using namespace kiln;  // NOLINT
using kiln::test::error_of;

TEST(ApiOptions, InputsTakeTheDefaultDtypeUnlessTheyNameOne) {
  auto specs = api::parse_inputs({"4x64", "2x3:int64", "8x128:int64[0,30522)"}, "half");
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].dtype, ir::DType::Float16);
  EXPECT_EQ(specs[0].shape, (std::vector<int64_t>{4, 64}));
  EXPECT_EQ(specs[1].dtype, ir::DType::Int64);
  EXPECT_EQ(specs[2].str(), "8x128:int64[0,30522)");
  EXPECT_EQ(api::parse_inputs({"4x64"}, "float32")[0].dtype, ir::DType::Float32);
  EXPECT_TRUE(api::parse_inputs({}, "float32").empty());
}

TEST(ApiOptions, ABadDefaultDtypeIsRefusedEvenWhenNoInputUsesIt) {
  const std::string expected = "--dtype 'float8': unknown dtype (use float32, float64, float16, bfloat16, int64, ...)";
  EXPECT_EQ(error_of([] { api::parse_inputs({"4x64"}, "float8"); }), expected);
  EXPECT_EQ(error_of([] { api::parse_inputs({"4x64:float16"}, "float8"); }), expected);
  EXPECT_EQ(error_of([] { api::parse_inputs({}, "float8"); }), expected);
  EXPECT_EQ(error_of([] { api::parse_call("4x64", "float8"); }), expected);
}

TEST(ApiOptions, ABadInputNamesIt) {
  EXPECT_NE(error_of([] { api::parse_inputs({"4x64", "4xa"}, "float32"); }).find("input '4xa'"), std::string::npos);
  EXPECT_NE(error_of([] { api::parse_call("4x64 0x2", "float32"); }).find("input '0x2'"), std::string::npos);
}

TEST(ApiOptions, OneCallHasItsArgumentsSeparatedBySpaces) {
  auto call = api::parse_call("  4x64   4x8:int64 ", "float64");
  ASSERT_EQ(call.size(), 2u);
  EXPECT_EQ(call[0].dtype, ir::DType::Float64);
  EXPECT_EQ(call[1].dtype, ir::DType::Int64);
  EXPECT_EQ(call[1].shape, (std::vector<int64_t>{4, 8}));
}

TEST(ApiOptions, Modes) {
  EXPECT_EQ(api::compile_modes(), (std::vector<std::string>{"default", "reduce-overhead", "max-autotune"}));
  for (const auto& m : api::compile_modes()) EXPECT_NO_THROW(api::check_mode(m));
  EXPECT_EQ(error_of([] { api::check_mode("fast"); }), "--mode 'fast': use default, reduce-overhead or max-autotune");
  EXPECT_NE(error_of([] { api::check_mode("eager"); }), "");  // profile's baseline, not a compile mode
}

TEST(ApiOptions, Dynamic) {
  EXPECT_EQ(api::parse_dynamic("auto"), std::nullopt);
  EXPECT_EQ(api::parse_dynamic("true"), std::optional<bool>(true));
  EXPECT_EQ(api::parse_dynamic("false"), std::optional<bool>(false));
  for (const char* bad : {"maybe", "True", ""})
    EXPECT_EQ(error_of([bad] { api::parse_dynamic(bad); }),
              std::string("--dynamic '") + bad + "': use auto, true or false");
}

TEST(ApiOptions, ConvLayout) {
  for (const char* ok : {"auto", "channels-last", "contiguous"}) EXPECT_NO_THROW(api::check_conv_layout(ok));
  EXPECT_EQ(error_of([] { api::check_conv_layout("nhwc"); }),
            "--conv-layout 'nhwc': use auto, channels-last or contiguous");
}

TEST(ApiOptions, LinearBias) {
  for (const char* ok : {"auto", "epilogue", "readers"}) EXPECT_NO_THROW(api::check_linear_bias(ok));
  EXPECT_EQ(error_of([] { api::check_linear_bias("fused"); }), "--linear-bias 'fused': use auto, epilogue or readers");
}

TEST(ApiOptions, RowStages) {
  for (const char* ok : {"auto", "separate"}) EXPECT_NO_THROW(api::check_row_stages(ok));
  for (const char* ok : {"auto", "on", "off"}) EXPECT_NO_THROW(api::check_split_reductions(ok));
  EXPECT_EQ(error_of([] { api::check_split_reductions("yes"); }), "--split-reductions 'yes': use auto, on or off");
  EXPECT_EQ(error_of([] { api::check_row_stages("off"); }), "--row-stages 'off': use auto or separate");
  for (const char* ok : {"auto", "fused", "separate"}) EXPECT_NO_THROW(api::check_attention(ok));
  EXPECT_EQ(error_of([] { api::check_attention("sdpa"); }), "--attention 'sdpa': use auto, fused or separate");
  for (const char* ok : {"auto", "generated", "extern"}) EXPECT_NO_THROW(api::check_depthwise(ok));
  EXPECT_EQ(error_of([] { api::check_depthwise("cudnn"); }), "--depthwise 'cudnn': use auto, generated or extern");
}

TEST(ApiOptions, Products) {
  for (const char* ok : {"auto", "library", "kiln"}) EXPECT_NO_THROW(api::check_products(ok));
  EXPECT_EQ(error_of([] { api::check_products("cublas"); }), "--products 'cublas': use auto, library or kiln");
}

// Default mode's bound on Kiln's own 16-bit products: unset, none (-1); a positive number of Gflop; anything else
// refused, naming the variable and its value.
TEST(ApiOptions, ProductBound) {
  ::unsetenv("KILN_OWN_PRODUCT_MAX_GFLOP");
  EXPECT_NO_THROW(api::check_product_bound());
  EXPECT_EQ(runtime::own_product_max_flop(), -1);
  ::setenv("KILN_OWN_PRODUCT_MAX_GFLOP", "2.5", 1);
  EXPECT_NO_THROW(api::check_product_bound());
  EXPECT_DOUBLE_EQ(runtime::own_product_max_flop(), 2.5e9);
  for (const char* bad : {"0", "-1", "nan", "lots", "", "1e", "3 "}) {
    ::setenv("KILN_OWN_PRODUCT_MAX_GFLOP", bad, 1);
    EXPECT_EQ(error_of([] { api::check_product_bound(); }),
              "KILN_OWN_PRODUCT_MAX_GFLOP='" + std::string(bad) + "': a positive number of Gflop")
        << bad;
  }
  ::unsetenv("KILN_OWN_PRODUCT_MAX_GFLOP");
}

TEST(ApiOptions, ConvWeights) {
  for (const char* ok : {"auto", "kept", "per-call"}) EXPECT_NO_THROW(api::check_conv_weights(ok));
  EXPECT_EQ(error_of([] { api::check_conv_weights("copy"); }), "--conv-weights 'copy': use auto, kept or per-call");
}
