// Escaping shared by every text format Kiln writes: one loop, each format naming what it replaces.
//
// replace_chars(text, replace): text with every character c for which replace(c) is not null
//   replaced by that string (the others kept as they are).
// quoted_literal(text, style): text as a double-quoted literal: \" \\ \n \r \t, and every other
//   control character as \u00XX (JSON) or \xXX (Python-like, DEL included: the IR's readable text).
#pragma once

#include <string>
#include <string_view>

namespace kiln {

using CharReplacement = const char* (*)(unsigned char c);

std::string replace_chars(std::string_view text, CharReplacement replace);

enum class LiteralStyle { Json, Python };

std::string quoted_literal(std::string_view text, LiteralStyle style);

}  // namespace kiln
