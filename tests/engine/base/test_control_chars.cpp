#include "engine/base/control_chars.h"

#include <gtest/gtest.h>

using namespace kiln;

TEST(ControlChars, EscapesC0DelAndC1KeepsTextTabsAndNewlines) {
  EXPECT_EQ(visible_controls("a\tb\nc"), "a\tb\nc");
  EXPECT_EQ(visible_controls("\x1b[2J\x07\x7f\r"), "\\x1b[2J\\x07\\x7f\\x0d");
  EXPECT_EQ(visible_controls("\xc2\x9b" "31m"), "\\u009b31m");
  EXPECT_EQ(visible_controls("caf\xc3\xa9 \xc2\xa0 \xe2\x86\x92"), "caf\xc3\xa9 \xc2\xa0 \xe2\x86\x92");
  EXPECT_EQ(visible_controls(std::string("a\0b", 3)), "a\\x00b");
}

TEST(ControlChars, StreamingHandlesAC1ControlSplitAcrossPieces) {
  ControlCharEscaper e;
  std::string out;
  e.feed("x\xc2", 2, out);
  e.feed("\x9by\xc2", 3, out);
  e.feed("\xa0", 1, out);
  e.feed("\xc2", 1, out);
  e.finish(out);
  EXPECT_EQ(out, "x\\u009by\xc2\xa0\xc2");
}
