// The CLI's stdout and stderr pass through a filter that makes control characters visible
// (engine/base/control_chars.h): names, messages and sources printed from logs, sessions and models
// cannot move the cursor, retitle the window or ring the bell of the reader's terminal. JSON and
// Markdown written to stdout never contain raw controls, so they pass unchanged.
#pragma once

#include <iosfwd>

#include "engine/api/files.h"

namespace kiln::cli {

// Installs the filter on std::cout and std::cerr for the life of the returned guard.
class TerminalOutput : NonCopyable {
 public:
  TerminalOutput();
  ~TerminalOutput();
};

// A carriage return for Kiln's own progress lines on a terminal, written past the filter.
void carriage_return(std::ostream& stream);

}  // namespace kiln::cli
