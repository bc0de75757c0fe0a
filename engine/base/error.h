// kiln::Error — the one exception type the engine throws for bad input.
//
// The message always names the input (a file, a tensor, a flag) and says what is
// wrong with it, in one line. Callers at the edges (CLI, GUI, API) catch it and
// show the message; nothing inside the engine swallows it.
#pragma once

#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace kiln
