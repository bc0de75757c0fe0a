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

// A number read as an integer that no int64 holds (a flow id of 4.44e87 in a fuzzed profiler trace made
// the conversion undefined behaviour) gives the fallback, like a non-number; others truncate.
TEST(JsonDoc, IntegersOutsideInt64GiveTheFallback) {
  JsonParser parser;
  JsonValue v;
  ASSERT_TRUE(parser.parse(R"({"big": 4.44444e87, "small": -1e300, "edge": 9223372036854775808.0, "ok": 12.9,
    "neg": -7.5, "int": -9223372036854775808, "s": "12"})", v));
  EXPECT_EQ(v["big"].i64(-1), -1);
  EXPECT_EQ(v["small"].i64(-1), -1);
  EXPECT_EQ(v["edge"].i64(-1), -1);
  EXPECT_EQ(v["ok"].i64(-1), 12);
  EXPECT_EQ(v["neg"].i64(-1), -7);
  EXPECT_EQ(v["int"].i64(-1), INT64_MIN);
  EXPECT_EQ(v["s"].i64(-1), -1);
}

// Either backend: an object's fields in the document's order (stored args are dumped from them), and a
// key repeated in one object looked up as its first value, nesting included.
TEST(JsonDoc, FieldsKeepTheDocumentsOrderAndARepeatedKeyGivesItsFirstValue) {
  JsonParser parser;
  JsonValue v;
  ASSERT_TRUE(parser.parse(R"({"z":1,"a":{"y":2,"b":[{"q":1,"c":2}]},"m":null})", v));
  std::string order;
  v.each_field([&](std::string_view k, const JsonValue&) { order += std::string(k) + ","; });
  EXPECT_EQ(order, "z,a,m,");
  EXPECT_EQ(v.dump(), R"({"z":1,"a":{"y":2,"b":[{"q":1,"c":2}]},"m":null})");
  EXPECT_EQ(v["a"].dump(), R"({"y":2,"b":[{"q":1,"c":2}]})");

  ASSERT_TRUE(parser.parse(R"({"k":1,"o":{"k":2,"n":{"k":3,"k":4},"k":5},"k":6,"x":[{"k":7,"k":8}]})", v));
  EXPECT_EQ(v["k"].i64(), 1);
  EXPECT_EQ(v["o"]["k"].i64(), 2);
  EXPECT_EQ(v["o"]["n"]["k"].i64(), 3);
  int seen = 0;
  v["x"].each_element([&](const JsonValue& e) {
    EXPECT_EQ(e["k"].i64(), 7);
    ++seen;
  });
  EXPECT_EQ(seen, 1);
  // The parser is used again: the keys of the last document do not leak into the next.
  ASSERT_TRUE(parser.parse(R"({"k":9})", v));
  EXPECT_EQ(v["k"].i64(), 9);
}
