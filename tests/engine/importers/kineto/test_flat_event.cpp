// FlatEventReader against ChromeEvent: an event it reads has the length ChromeEvent finds and every
// member the importer looks at answers as ChromeEvent's value does (dump() byte for byte); what it
// leaves is what ChromeEvent or JsonParser must read. And the import reads Kineto's own indented
// files and the same events written without white space into the same session.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/importers/common/json_doc.h"
#include "engine/importers/kineto/chrome_event.h"
#include "engine/importers/kineto/flat_event.h"
#include "engine/importers/kineto/kineto.h"
#include "engine/report/render_json.h"
#include "tests/engine/importers/kineto/same_answers.h"
#include "tests/support/paths.h"

using namespace kiln::importers;  // NOLINT

namespace {

void expect_same(const FlatValue& a, const EventValue& b, const std::string& where) {
  kiln::test::expect_same_answers(a, b, where);
  EXPECT_EQ(a.dumped(), b.dumped()) << where;
}

// Reads text with both; returns whether FlatEventReader read it.
bool compare(const std::string& text) {
  FlatEventReader flat;
  FlatEvent e;
  const size_t length = flat.read(text, &e);
  if (length == 0) return false;
  ChromeEvent doc;
  size_t doc_length = 0;
  const int32_t root = doc.read_prefix(text, &doc_length);
  EXPECT_GE(root, 0) << "FlatEventReader read what ChromeEvent does not: " << text;
  if (root < 0) return true;
  EXPECT_EQ(length, doc_length) << text;
  const EventValue r = doc.value(root);
  const EventValue args = r["args"].is_object() ? r["args"] : EventValue();
  for (const FlatMember& m : kFlatMembers)
    expect_same(e.*m.value, (m.in_args ? args : r)[m.name], text + " " + m.name);
  return true;
}

}  // namespace

TEST(FlatEvent, ReadsKinetoEventsAsChromeEventDoes) {
  if (!json_backend_is_simdjson()) GTEST_SKIP() << "the fast readers exist with the simdjson backend only";
  // Minified, as written by other tools, with what follows the event left unread.
  EXPECT_TRUE(compare(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":4477225964495.568,"dur":3.5,)"
                      R"("args":{"External id":12,"block":[64,1,1],"blocks per SM":0.121212,"correlation":63,)"
                      R"("device":0,"grid":[8,2,1],"registers per thread":80,"shared memory":6912,"stream":7}},{"x":1})"));
  // Kineto's own layout: indented, members on shared lines.
  EXPECT_TRUE(compare("{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 1034, \"tid\": 1034,\n"
                      "    \"ts\": 4477225964495.568, \"dur\": 3147.667,\n    \"args\": {\n"
                      "      \"External id\": 1,\"Record function id\": 0, \"Ev Idx\": 0, \"grid\": [ 8, 2 ,1 ]\n    }\n  }"));
  // Repeated names: the first counts, also inside args; a second args object gives no members.
  EXPECT_TRUE(compare(R"({"ph":"X","ph":"i","args":{"stream":1,"stream":2},"args":{"device":3}})"));
  // A first args that is not an object: no args members at all.
  EXPECT_TRUE(compare(R"({"args":[1,2],"args":{"device":3},"name":"n"})"));
  // Kinds the importer does not expect, each answered as ChromeEvent answers them.
  EXPECT_TRUE(compare(R"({"ph":1,"cat":null,"name":{"a":1},"pid":"p","tid":true,"ts":"t","dur":-0.5,"id":-3,)"
                      R"("args":{"device":"d","stream":[],"correlation":1.5,"External id":2.25,"grid":{},"block":"b"}})"));
  EXPECT_TRUE(compare(R"({})"));
  EXPECT_TRUE(compare(R"({"a":{"b":{"c":[[[]]]}},"ts":0.0,"dur":-0.0,"id":0})"));
  // Doubles near the fast conversion's limits: 2^53, 22 fraction digits, 19 digits, more.
  EXPECT_TRUE(compare(R"({"ts":9007199254740992.0,"dur":0.1234567890123456789012})"));
  EXPECT_TRUE(compare(R"({"ts":9007199254740993.5,"dur":0.12345678901234567890123,"id":1.7976931348623157e308})"));
  EXPECT_TRUE(compare(R"({"ts":1234567890.123456789,"dur":0.000000000000000000001})"));
}

TEST(FlatEvent, LeavesWhatItCannotReadToChromeEventOrJsonParser) {
  if (!json_backend_is_simdjson()) GTEST_SKIP() << "the fast readers exist with the simdjson backend only";
  // Escapes and non-ASCII (JsonParser's), a double in args that dump() writes differently
  // (ChromeEvent's, which rewrites it), deep nesting, long integers, "-0", cut text, bad JSON.
  const std::vector<std::string> texts = {
        R"({"name":"a\"b"})", "{\"name\":\"\xc3\xa9\"}", R"({"args":{"x":1.50}})", R"({"args":{"x":1e5}})",
        "{\"a\":" + std::string(40, '['), R"({"id":1234567890123456789})", R"({"id":-0})",
        R"({"ph":"X","ts":1)", R"({"ph" "X"})", R"({"ph":"X",})", R"({"ph":tru})", R"({"ph":"X"])", R"({"ts":1.})",
        R"({"ts":.5})", R"({"ts":01})", R"({"ts":1e})", "", "[]", " {}"};
  for (const std::string& text : texts) {
    EXPECT_FALSE(compare(text)) << text;
  }
  // The same in long strings, anywhere in the sixteen-byte blocks they are scanned by: a byte above
  // 0x7F (valid UTF-8 or not), a control character, an escape.
  for (const std::string& odd : {std::string("\xc3\xa9"), std::string("\xff"), std::string("\x01"), std::string("\\n")}) {
    for (size_t at : {0u, 5u, 15u, 16u, 17u, 31u, 40u, 63u}) {
      std::string name(64, 'a');
      name.insert(at, odd);
      const std::string text = "{\"ph\":\"X\",\"name\":\"" + name + "\",\"ts\":1}";
      EXPECT_FALSE(compare(text)) << "at " << at << ": " << text;
    }
  }
  EXPECT_TRUE(compare("{\"ph\":\"X\",\"name\":\"" + std::string(64, 'a') + "\",\"ts\":1}"));
}

TEST(FlatEvent, AgreesWithChromeEventOnRandomEdits) {
  if (!json_backend_is_simdjson()) GTEST_SKIP() << "the fast readers exist with the simdjson backend only";
  // Random bytes changed in a real event, a fresh seed each run (printed to reproduce a failure).
  const std::string base =
      "{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm80_xmma_gemm\", \"pid\": 0, \"tid\": 7,\n"
      "    \"ts\": 4477248227617.573, \"dur\": 5.056,\n    \"args\": {\n      \"External id\": 3500012,"
      " \"block\": [64, 1, 1], \"blocks per SM\": 0.121212, \"correlation\": 3500063, \"device\": 0,"
      " \"grid\": [8, 2, 1], \"registers per thread\": 80, \"shared memory\": 6912, \"stream\": 7\n    }\n  }";
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  const std::string alphabet = "{}[]\":,. \n-+eE0123456789abtrufalsn\\";
  int read = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1); break;
        default: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
    }
    read += compare(text) ? 1 : 0;
    if (testing::Test::HasFailure()) {
      ADD_FAILURE() << "seed " << seed << ", edit " << i;
      break;
    }
  }
  EXPECT_GT(read, 0) << "seed " << seed;
}

TEST(FlatEvent, KinetosIndentedFileAndItsMinifiedFormImportAlike) {
  // The same events in both layouts give the same session (the minified copy written by a parser
  // that keeps member order).
  const std::string indented = kiln::test::data("traces/kineto_small_mlp.json");
  const std::string text = kiln::test::read_file(indented);
  const std::string minified = nlohmann::ordered_json::parse(text).dump();
  const std::string path = kiln::test::temp_dir() + "/minified.json";
  std::ofstream(path, std::ios::binary) << minified;
  auto render = [](const std::string& p) {
    auto s = import_kineto_trace(p);
    s.env.created_at.clear();
    s.model.path.clear();
    s.import_notes.clear();
    return kiln::report::render_json(s);
  };
  const std::string a = render(indented), b = render(path);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}
