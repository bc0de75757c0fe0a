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

TEST(InputSpec, IntegerValueRanges) {
  auto s = parse_input_spec("8x128:int64[0,30522)");
  EXPECT_EQ(s.shape, (std::vector<int64_t>{8, 128}));
  EXPECT_EQ(s.dtype, ir::DType::Int64);
  ASSERT_TRUE(s.low && s.high);
  EXPECT_EQ(*s.low, 0);
  EXPECT_EQ(*s.high, 30522);
  EXPECT_EQ(s.str(), "8x128:int64[0,30522)");
  auto neg = parse_input_spec("4:int32[-5,5)");
  EXPECT_EQ(*neg.low, -5);
  EXPECT_FALSE(parse_input_spec("8x128:int64").low);
  for (const char* bad : {"8:int64[0,3", "8:int64[3,3)", "8:int64[0,3]", "8:int64[a,3)", "8:float32[0,3)", "8[0,3)",
                          "8:int64[0,3)x"}) {
    std::string err;
    try {
      parse_input_spec(bad);
    } catch (const Error& e) {
      err = e.what();
    }
    EXPECT_NE(err.find(std::string("input '") + bad + "'"), std::string::npos) << bad << ": " << err;
  }
}
