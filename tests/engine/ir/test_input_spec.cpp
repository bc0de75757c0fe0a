#include "engine/ir/input_spec.h"

#include <gtest/gtest.h>

#include "engine/base/error.h"

using namespace kiln;

TEST(InputSpec, ParsesShapesAndDtypes) {
  auto a = parse_input_spec("8x64");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{8, 64}));
  EXPECT_EQ(a.dtype, ir::DType::Float32);
  auto b = parse_input_spec("2x3x32x32:float16");
  EXPECT_EQ(b.shape.size(), 4u);
  EXPECT_EQ(b.dtype, ir::DType::Float16);
  auto c = parse_input_spec("int64:4x8");
  EXPECT_EQ(c.dtype, ir::DType::Int64);
  EXPECT_EQ(c.str(), "4x8:int64");
  EXPECT_TRUE(parse_input_spec("scalar").shape.empty());
  EXPECT_EQ(parse_input_spec("4,8", ir::DType::Float64).dtype, ir::DType::Float64);
}

TEST(InputSpec, RejectsBadText) {
  for (const char* bad : {"", "8x", "x8", "8xa", "0x4", "-1x4", "8x64:complex", "99999999x99999999"}) {
    try {
      parse_input_spec(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("input '") + bad + "'"), std::string::npos) << e.what();
    }
  }
}
