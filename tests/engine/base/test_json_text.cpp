// JSON text helpers: a string escaped directly is what the JSON library writes for it.
#include "engine/base/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

using namespace kiln;

namespace {

std::string library(const std::string& s) { return safe_dump(nlohmann::json(s)); }

std::string direct(const std::string& s) {
  std::string out = "x";  // appended after what is there
  append_json_string(out, s);
  return out.substr(1);
}

}  // namespace

// Every single byte, and fresh random strings of ASCII, control characters, DEL, UTF-8 (valid, cut
// short and invalid) each run (the seed is printed on a failure); plain runs longer than the sixteen
// bytes escaped at once, and JSON texts, quotes every few bytes, among them.
TEST(JsonText, AStringIsEscapedAsTheJsonLibraryEscapesIt) {
  for (int b = 0; b < 256; ++b) {
    const std::string s(1, static_cast<char>(b));
    EXPECT_EQ(direct(s), library(s)) << "byte " << b;
  }
  const std::vector<std::string> pieces = {"a",  "Z",  " ",  "\"", "\\", "/",  "\b", "\f", "\n", "\r", "\t", std::string(1, '\0'),
                                           "\x01", "\x1f", "\x7f", "\xc3\xa9", "\xe2\x98\x83", "\xf0\x9f\x98\x80",
                                           "\xff", "\xc3", "\xe2\x98", "</script>", "File: x.py:3",
                                           "{\"External id\": 17, \"Ev Idx\": 3}", "seventeen letters"};
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    for (size_t n = rng() % 12; n > 0; --n) s += pieces[rng() % pieces.size()];
    ASSERT_EQ(direct(s), library(s)) << "seed " << seed << " round " << round;
  }
}

// Written in place, the escaped string is what append_json_escaped appends, for every byte (above
// 0x7F as it is) and runs of plain bytes of every length around the eight copied at once.
TEST(JsonText, WrittenInPlaceIsWhatIsAppended) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    for (size_t n = rng() % 40; n > 0; --n) {
      if (rng() % 3) s.append(rng() % 20, static_cast<char>('a' + rng() % 26));
      else s += static_cast<char>(rng() % 256);
    }
    std::string appended = "x";
    append_json_escaped(appended, s);
    std::string written(json_escaped_bound(s.size()) + 1, '?');
    written[0] = 'x';
    char* end = write_json_escaped(written.data() + 1, s);
    ASSERT_LE(static_cast<size_t>(end - written.data()), written.size()) << "seed " << seed << " round " << round;
    written.resize(static_cast<size_t>(end - written.data()));
    ASSERT_EQ(written, appended) << "seed " << seed << " round " << round;
  }
}
