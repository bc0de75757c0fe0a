// Control characters made visible, for text that reaches a terminal or a plain-text file from
// someone else's log, session or model: ESC, BEL and friends must not drive the reader's terminal.
//
// visible_controls(text): C0 controls other than tab and newline, DEL, and the C1 controls (U+0080
// to U+009F, as UTF-8) become the four characters `\xNN` (`\u0085` for C1). Other bytes pass
// unchanged (invalid UTF-8 too: a terminal shows it as replacement characters, never as commands).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln {

std::string visible_controls(std::string_view text);

// The same, over a stream cut into arbitrary pieces (a C1 control may straddle two pieces).
class ControlCharEscaper {
 public:
  void feed(const char* data, size_t size, std::string& out);
  void finish(std::string& out);  // flushes a lone pending byte

 private:
  bool pending_c2_ = false;  // the previous piece ended with the lead byte 0xC2
};

}  // namespace kiln
