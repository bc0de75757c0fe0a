// The importers' JSON adapter: JsonValue::dump writes what simdjson's minifier writes (the stored
// args of imported events depend on it), fast path and escapes alike.
#include "engine/importers/common/json_doc.h"

#include <gtest/gtest.h>

using namespace kiln::importers;  // NOLINT

TEST(JsonDoc, DumpIsMinifiedWithEveryEscapeAndNumberForm) {
  JsonParser parser;
  JsonValue v;
  ASSERT_TRUE(parser.parse(R"({ "a" : [1, -2, 18446744073709551615, -9223372036854775808, 0.5, 1E5, -0.0, 1e-7,
    3.0e300, true, false, null],
  "s" : "q\" b\\ \n\t\b\f\r \u0001 \u001f \u007f \u00e9 \/ \u20ac", "o" : { }, "e" : [ ] })",
                           v));
  EXPECT_EQ(v.dump(),
            R"({"a":[1,-2,18446744073709551615,-9223372036854775808,0.5,100000.0,-0.0,1e-07,3e+300,true,false,)"
            R"(null],"s":"q\" b\\ \n\t\b\f\r \u0001 \u001f )"
            "\x7f \xc3\xa9 / \xe2\x82\xac"
            R"(","o":{},"e":[]})");
  EXPECT_EQ(v["s"].dump(), R"("q\" b\\ \n\t\b\f\r \u0001 \u001f )" "\x7f \xc3\xa9 / \xe2\x82\xac\"");
  EXPECT_EQ(v["a"].dump().substr(0, 5), "[1,-2");
  EXPECT_EQ(v["missing"].dump(), "");
}

TEST(JsonDoc, DumpOfLongStringsWithManyEscapes) {
  std::string code;
  for (int i = 0; i < 2000; ++i) code += "def f" + std::to_string(i) + "():\\n    return \\\"x\\\"\\t\\\\\\n";
  JsonParser parser;
  JsonValue v;
  ASSERT_TRUE(parser.parse("{\"components\": [\"" + code + "\", \"plain\"]}", v));
  EXPECT_EQ(v.dump(), "{\"components\":[\"" + code + "\",\"plain\"]}");
}
