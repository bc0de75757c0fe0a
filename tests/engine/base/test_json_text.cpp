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
// short and invalid) each run (the seed is printed on a failure).
TEST(JsonText, AStringIsEscapedAsTheJsonLibraryEscapesIt) {
  for (int b = 0; b < 256; ++b) {
    const std::string s(1, static_cast<char>(b));
    EXPECT_EQ(direct(s), library(s)) << "byte " << b;
  }
  const std::vector<std::string> pieces = {"a",  "Z",  " ",  "\"", "\\", "/",  "\b", "\f", "\n", "\r", "\t", std::string(1, '\0'),
                                           "\x01", "\x1f", "\x7f", "\xc3\xa9", "\xe2\x98\x83", "\xf0\x9f\x98\x80",
                                           "\xff", "\xc3", "\xe2\x98", "</script>", "File: x.py:3"};
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    for (size_t n = rng() % 12; n > 0; --n) s += pieces[rng() % pieces.size()];
    ASSERT_EQ(direct(s), library(s)) << "seed " << seed << " round " << round;
  }
}
