// ChromeEvent against JsonParser: every event it reads answers as the parsed document does (dump()
// byte for byte), and what it does not read is left to JsonParser whole.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/importers/common/json_doc.h"
#include "engine/importers/kineto/chrome_event.h"
#include "engine/importers/kineto/chrome_trace_scanner.h"
#include "tests/engine/importers/kineto/same_answers.h"
#include "tests/support/paths.h"

using namespace kiln::importers;  // NOLINT

namespace {

// The same questions to both views, recursively through objects (and the dumps of arrays).
void expect_same(const EventValue& a, const JsonValue& b, const std::string& where, bool root = false) {
  kiln::test::expect_same_answers(a, b, where, !root);
  if (testing::Test::HasFatalFailure()) return;
  if (b.is_object())
    b.each_field([&](std::string_view key, const JsonValue&) {
      expect_same(a[key], b[key], where + "." + std::string(key));
    });
  EXPECT_FALSE(a["no such key"].exists());
}

void check(const std::string& text, bool expect_read) {
  ChromeEvent doc;
  int32_t root = doc.read(text);
  if (!json_backend_is_simdjson()) {
    EXPECT_LT(root, 0);
    return;
  }
  EXPECT_EQ(root >= 0, expect_read) << text;
  if (root < 0) return;
  JsonParser parser;
  JsonValue v;
  ASSERT_TRUE(parser.parse(text, v)) << text;
  expect_same(doc.value(root), v, text, true);
}

}  // namespace

TEST(ChromeEvent, AnswersAsTheParsedDocument) {
  check(R"({"ph":"X","cat":"kernel","name":"k","pid":1,"tid":7,"ts":4477225964495.568,"dur":3})", true);
  check(R"( { "ph" : "X" , "args" : { "grid" : [ 1 , 2 ,3 ], "x": 0.121212, "y": 1E5, "z": -2.5e-3,
           "n": null, "t": true, "f": false, "e": {}, "a": [], "big": 123456789012345678, "neg": -42,
           "deep": {"a": [{"b": [1.0, "s", 0]}]} } , "ts": 12, "dur": 1.50 }  )",
        true);
  check(R"({"args":{"k":1,"k":2},"id":3.9e3,"pid":"host","tid":-1.5})", true);  // duplicates: the first
  check(R"({})", true);
  // Outside the subset: escapes, non-ASCII, long integers, negative zero, out-of-range doubles.
  check(R"({"name":"a\"b"})", false);
  check("{\"name\":\"caf\xc3\xa9\"}", false);
  check(R"({"id":12345678901234567890})", false);
  check(R"({"id":-0})", false);
  check(R"({"ts":1e400})", false);
  // Not JSON at all.
  check(R"({"ph":"X",})", false);
  check(R"({"ph":"X"} x)", false);
  check(R"({"ph":01})", false);
  check(R"({"ph":1.})", false);
  check(R"({"ph":"X"])", false);
  check(R"([1,2])", false);
  check(R"({"ph":tru})", false);
  check("{\"ph\":\"a\tb\"}", false);
}

TEST(ChromeEvent, EveryEventOfTheProfilerSample) {
  std::string trace = kiln::test::read_file(kiln::test::data("traces/kineto_small_mlp.json"));
  int read = 0, events = 0;
  ChromeTraceScanner scanner([&](std::string_view text) {
    ++events;
    ChromeEvent doc;
    int32_t root = doc.read(text);
    if (root < 0) return;
    ++read;
    JsonParser parser;
    JsonValue v;
    ASSERT_TRUE(parser.parse(text, v));
    expect_same(doc.value(root), v, std::string(text.substr(0, 80)), true);
  });
  scanner.feed(trace);
  scanner.finish();
  EXPECT_GT(events, 100);
  if (json_backend_is_simdjson()) EXPECT_EQ(read, events);
}

TEST(ChromeEvent, EventsReadOneAfterAnotherStayReadable) {
  if (!json_backend_is_simdjson()) GTEST_SKIP();
  ChromeEvent doc;
  std::string a = R"({"args":{"grid":[1,2]},"name":"a"})", b = R"({"args":{"grid":[3]},"name":"b"})";
  int32_t ra = doc.read(a), bad = doc.read("{\"x\":"), rb = doc.read(b);
  EXPECT_LT(bad, 0);
  EXPECT_EQ(doc.value(ra)["args"]["grid"].dump(), "[1,2]");
  EXPECT_EQ(doc.value(rb)["args"]["grid"].dump(), "[3]");
  EXPECT_EQ(doc.value(rb)["name"].str(), "b");
}

// read_prefix reads the object a text starts with as read() reads it alone, whatever follows it, and
// nothing of an object cut short.
TEST(ChromeEvent, ReadPrefixReadsTheLeadingObjectAsReadDoes) {
  if (!json_backend_is_simdjson()) GTEST_SKIP();
  const std::vector<std::string> objects = {
      R"({"ph":"X","cat":"kernel","name":"k","pid":1,"tid":7,"ts":4477225964495.568,"dur":3})",
      R"({ "ph" : "X" , "args" : { "grid" : [ 1 , 2 ,3 ], "x": 0.121212, "deep": {"a": [{"b": [1.0, "s", 0]}]} } })",
      R"({})",
      R"({"s":"}]{["})",
      R"({"name":"a\"b"})",  // outside the subset: -1 from both
      R"({"ph":"X",})",      // not JSON: -1 from both
  };
  for (const auto& object : objects) {
    ChromeEvent alone;
    const bool readable = alone.read(object) >= 0;
    for (std::string tail : {"", ",", ", {\"ph\": \"i\"}]}", "garbage", "}"}) {
      ChromeEvent doc;
      size_t length = 0;
      const std::string text = object + tail;
      int32_t root = doc.read_prefix(text, &length);
      ASSERT_EQ(root >= 0, readable) << text;
      if (root < 0) continue;
      EXPECT_EQ(length, object.size()) << text;
      JsonParser parser;
      JsonValue v;
      ASSERT_TRUE(parser.parse(object, v));
      expect_same(doc.value(root), v, text, true);
    }
    for (size_t cut = 0; cut < object.size(); ++cut) {
      ChromeEvent doc;
      size_t length = 0;
      EXPECT_LT(doc.read_prefix(std::string_view(object).substr(0, cut), &length), 0) << object << " cut at " << cut;
    }
  }
  ChromeEvent doc;
  size_t length = 0;
  EXPECT_LT(doc.read_prefix(R"( {"ph":"X"})", &length), 0);  // white space first: not an object's start
}

TEST(ChromeEvent, EachMemberListsAnObjectsMembersInOrder) {
  if (!json_backend_is_simdjson()) GTEST_SKIP();
  ChromeEvent doc;
  int32_t root = doc.read(R"({"a":1,"b":{"c":[2]},"a":"again"})");
  ASSERT_GE(root, 0);
  std::vector<std::string> seen;
  doc.value(root).each_member([&](std::string_view key, const EventValue& v) {
    seen.push_back(std::string(key) + "=" + (v.is_object() ? v.dump() : v.is_string() ? std::string(v.str()) : std::to_string(v.i64())));
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"a=1", R"(b={"c":[2]})", "a=again"}));
  int calls = 0;
  doc.value(root)["a"].each_member([&](std::string_view, const EventValue&) { ++calls; });
  doc.value(root)["missing"].each_member([&](std::string_view, const EventValue&) { ++calls; });
  EXPECT_EQ(calls, 0);
}
